// Parameterizations (--param sp|mup|completep): the rules of every tensor, the identity
// of CompleteP at its base shape with SP, and the coordinate check (muP's own test): a
// few AdamW steps at several widths and depths, watching per-layer activations and their
// change from init. A wrong multiplier shows as a slope in width or depth.
#include "catch.h"

#include <cmath>
#include <cstdio>
#include <map>

#include <torch/torch.h>

#include "model/model.h"
#include "model/parameterization.h"
#include "train/optimizer.h"
#include "train/train_config.h"

using namespace shapelaw;

namespace {

ModelConfig shape(int depth, int width, const std::string& param, int base_width = 32, int base_depth = 2) {
  ModelConfig c;
  c.depth = depth;
  c.width = width;
  c.head_dim = 16;
  c.vocab_size = 64;
  c.seq_len = 16;
  c.param = param;
  c.base_width = base_width;
  c.base_depth = base_depth;
  return c;
}

double rms(const torch::Tensor& t) { return t.to(torch::kFloat64).pow(2).mean().sqrt().item<double>(); }

struct Coord {
  std::vector<double> act, delta;  // per layer (blocks..., logits): RMS at the end, RMS of the change
};

// `steps` AdamW steps at lr on one fixed batch; activations on another fixed batch.
Coord coordinates(const ModelConfig& c, double lr, int steps = 10) {
  torch::manual_seed(7);
  Transformer model(c);
  TrainConfig tc;
  tc.model = c;
  tc.lr = lr;
  tc.weight_decay = 0.0;
  Optimizer opt(*model, tc);
  auto gen = at::detail::createCPUGenerator(11);
  auto x = torch::randint(0, c.vocab_size, {8, c.seq_len + 1}, gen, torch::kLong);
  auto probe = torch::randint(0, c.vocab_size, {8, c.seq_len}, gen, torch::kLong);
  std::vector<torch::Tensor> before;
  {
    torch::NoGradGuard ng;
    before = model->activations(probe);
  }
  for (int s = 0; s < steps; ++s) {
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    model->loss(x.slice(1, 0, c.seq_len), x.slice(1, 1, c.seq_len + 1)).backward();
    opt.set_lr(lr);
    opt.step(1.0);
  }
  torch::NoGradGuard ng;
  auto after = model->activations(probe);
  Coord out;
  for (size_t l = 0; l < after.size(); ++l) {
    out.act.push_back(rms(after[l]));
    out.delta.push_back(rms(after[l] - before[l]));
  }
  return out;
}

// ratio of the last block's and the logits' change between the largest and smallest shape
struct Growth {
  double hidden, logits;
};
Growth growth(const Coord& small, const Coord& large) {
  const size_t hs = small.delta.size() - 2, hl = large.delta.size() - 2;
  return {large.delta[hl] / small.delta[hs], large.delta.back() / small.delta.back()};
}

// The coordinate-check table (ctest -V shows it; docs/benchmarks.md quotes it).
void print_rows(const std::string& param, const char* axis, const std::vector<int>& values, const std::vector<Coord>& rows) {
  for (size_t i = 0; i < rows.size(); ++i)
    std::printf("  %-9s %s=%-4d act %.3g  d_hidden %.3g  d_logits %.3g\n", param.c_str(), axis, values[i],
                rows[i].act[rows[i].act.size() - 2], rows[i].delta[rows[i].delta.size() - 2], rows[i].delta.back());
}

}  // namespace

TEST_CASE("parameterization: the rule of every tensor of a small model") {
  for (const std::string param : {"sp", "mup", "completep"}) {
    ModelConfig c = shape(4, 64, param, 16, 2);  // m_w = 4, m_d = 2
    c.bias = true;
    c.depth_alpha = 1.0;
    const Multipliers m = parameterization_multipliers(c);
    Transformer model(c);
    TrainConfig tc;
    tc.model = c;
    Optimizer opt(*model, tc);
    std::map<std::string, const OptimizerGroup*> group_of;
    for (auto& g : opt.groups())
      for (auto& n : g.names) group_of[n] = &g;
    const bool sp = param == "sp", cp = param == "completep";
    for (auto& item : model->named_parameters()) {
      const std::string& n = item.key();
      INFO(param << " " << n);
      REQUIRE(group_of.count(n));
      const OptimizerGroup& g = *group_of[n];
      const bool in_block = n.rfind("block", 0) == 0, matrix = item.value().dim() >= 2;
      double lr = 1, wd = matrix ? tc.weight_decay : 0.0, eps = tc.eps;
      if (in_block && !sp) {
        const double depth_lr = cp ? std::pow(2.0, 1.0 - 1.0) : 1.0;  // m_d^(alpha-1) = 1 at alpha 1
        lr = matrix ? depth_lr / 4.0 : depth_lr;
        if (cp && matrix) wd *= 4.0;
        if (cp) eps *= matrix ? 1.0 / (4.0 * 2.0) : 1.0 / 2.0;
      }
      CHECK(g.lr_mult == Approx(lr));
      CHECK(g.weight_decay == Approx(wd));
      CHECK(g.eps == Approx(eps));
    }
    CHECK(m.residual == Approx(cp ? 0.5 : 1.0));
    CHECK(m.logit == Approx(sp ? 1.0 : 0.25));
    CHECK(m.attn_scale == Approx(sp ? 0.25 : 1.0 / 16));
    CHECK(m.hidden_init == Approx(sp ? 1.0 : 0.5));
    CHECK(m.resid_out_divisor == Approx(sp ? std::sqrt(8.0) : 1.0));
    if (sp) CHECK(opt.groups().size() == 2);  // decayed matrices, vectors: the classic pair
  }
  // depth-muP's exponent: lr of hidden matrices eta / m_w * m_d^(alpha - 1)
  ModelConfig c = shape(8, 64, "completep", 16, 2);
  c.depth_alpha = 0.5;
  Multipliers m = parameterization_multipliers(c);
  CHECK(m.residual == Approx(std::pow(4.0, -0.5)));
  CHECK(m.hidden_matrix.lr == Approx(std::pow(4.0, -0.5) / 4.0));
}

TEST_CASE("parameterization: completep at its base shape with SP's attention scale and init is SP") {
  ModelConfig sp = shape(3, 48, "sp", 0, 0);
  ModelConfig cp = shape(3, 48, "completep", 48, 3);
  cp.attn_scale = "inv-sqrt";
  cp.resid_init = "depth";
  auto losses = [](const ModelConfig& c) {
    torch::manual_seed(3);
    Transformer model(c);
    TrainConfig tc;
    tc.model = c;
    tc.lr = 3e-3;
    Optimizer opt(*model, tc);
    auto gen = at::detail::createCPUGenerator(5);
    auto x = torch::randint(0, c.vocab_size, {4, c.seq_len + 1}, gen, torch::kLong);
    std::vector<double> out;
    for (int s = 0; s < 5; ++s) {
      for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
      auto loss = model->loss(x.slice(1, 0, c.seq_len), x.slice(1, 1, c.seq_len + 1));
      loss.backward();
      out.push_back(loss.item<double>());
      opt.set_lr(tc.lr);
      opt.step(1.0);
    }
    return out;
  };
  CHECK(losses(sp) == losses(cp));  // bit for bit
  cp.attn_scale = "auto";           // CompleteP's own 1/d differs
  CHECK(losses(sp) != losses(cp));
}

TEST_CASE("parameterization: coordinate check in width - flat under mup and completep, growing under sp") {
  const double lr = 1e-2;
  std::printf("coordinate check, width (D=2, base W0=32, 10 AdamW steps, lr %g): change of last block / logits\n", lr);
  for (const std::string param : {"sp", "mup", "completep"}) {
    const std::vector<int> widths{32, 64, 128, 256};
    std::vector<Coord> rows;
    for (int w : widths) rows.push_back(coordinates(shape(2, w, param), lr));
    print_rows(param, "W", widths, rows);
    Growth g = growth(rows.front(), rows.back());
    INFO(param << ": growth W=32 -> 256 of the hidden change " << g.hidden << ", of the logits' change " << g.logits);
    if (param == "sp") {
      CHECK(g.logits > 3.0);  // SP: the logits' update grows ~ width under Adam
    } else {
      // within a factor 2 over an 8x range of width
      CHECK(g.hidden > 0.5);
      CHECK(g.hidden < 2.0);
      CHECK(g.logits > 0.5);
      CHECK(g.logits < 2.0);
    }
  }
}

TEST_CASE("parameterization: coordinate check in depth - flat under completep, growing under sp") {
  const double lr = 1e-2;
  std::printf("coordinate check, depth (W=64, base D0=2, 10 AdamW steps, lr %g): change of last block / logits\n", lr);
  for (const std::string param : {"sp", "completep"}) {
    const std::vector<int> depths{2, 4, 8, 16};
    std::vector<Coord> rows;
    for (int d : depths) rows.push_back(coordinates(shape(d, 64, param, 64, 2), lr));
    print_rows(param, "D", depths, rows);
    Growth g = growth(rows.front(), rows.back());
    INFO(param << ": growth D=2 -> 16 of the last block's change " << g.hidden << ", of the logits' change " << g.logits);
    if (param == "sp") {
      CHECK(g.hidden > 2.0);  // SP: D blocks each add an O(lr) update to the residual stream
    } else {
      CHECK(g.hidden > 0.5);
      CHECK(g.hidden < 2.0);
      CHECK(g.logits > 0.5);
      CHECK(g.logits < 2.0);
    }
  }
}
