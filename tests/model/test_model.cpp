// Model shape, parameter counts against the paper's Table 9, and forward-pass sanity.
#include "catch.h"

#include <cmath>

#include <torch/torch.h>

#include "model/head_loss.h"
#include "model/model.h"
#include "model/model_config.h"

using namespace shapelaw;

namespace {
ModelConfig paper(int depth, int width) {
  ModelConfig c;
  c.depth = depth;
  c.width = width;
  c.vocab_size = 50257;
  c.mlp = "gelu";
  c.norm = "layernorm";
  return c;
}
ModelConfig tiny(const std::string& mlp, const std::string& norm) {
  ModelConfig c;
  c.depth = 2;
  c.width = 32;
  c.head_dim = 8;
  c.vocab_size = 97;
  c.seq_len = 16;
  c.mlp = mlp;
  c.norm = norm;
  return c;
}
}  // namespace

TEST_CASE("parameter counts reproduce the paper's Table 9 within 1%") {
  struct Row { int d, w; double millions; };
  // every row of Table 9 (vocab 50257, GELU, LayerNorm, untied embeddings)
  const Row rows[] = {{2, 256, 27.5},   {8, 256, 32.2},    {16, 256, 38.5},  {2, 512, 58.1},
                      {4, 512, 64.4},   {8, 512, 77.0},    {12, 512, 89.6},  {16, 512, 102.2},
                      {24, 512, 127.4}, {2, 1024, 128.7},  {32, 512, 152.6}, {8, 1024, 204.3},
                      {2, 1536, 211.9}, {4, 1536, 268.6},  {16, 1024, 305.0}, {8, 1536, 381.9},
                      {12, 1536, 495.2}, {16, 1536, 608.5}};
  for (const Row& r : rows) {
    ParamCounts p = count_parameters(paper(r.d, r.w));
    INFO(r.d << "L x " << r.w << "W: counted " << p.total / 1e6 << "M, paper " << r.millions << "M");
    CHECK(std::abs(p.total / 1e6 - r.millions) / r.millions < 0.01);
    CHECK(p.paper_12DW2 == 12LL * r.d * r.w * r.w);
    CHECK(p.total == p.non_embedding + 2LL * 50257 * r.w);
  }
}

TEST_CASE("analytic parameter count equals what the model allocates") {
  for (std::string mlp : {"gelu", "swiglu"})
    for (std::string norm : {"layernorm", "rmsnorm"})
      for (bool tie : {false, true})
        for (bool bias : {false, true}) {
          ModelConfig c = tiny(mlp, norm);
          c.tie_embeddings = tie;
          c.bias = bias;
          INFO(mlp << " " << norm << " tie=" << tie << " bias=" << bias);
          CHECK(allocated_parameter_count(c) == count_parameters(c).allocated);
          CHECK(count_parameters(c).allocated == count_parameters(c).total);
        }
}

TEST_CASE("a padded vocabulary (--vocab-multiple 64): the real vocabulary's numbers, the padding rows dead") {
  ModelConfig c = tiny("gelu", "layernorm");  // V = 97
  ModelConfig padded = c;
  padded.vocab_multiple = 64;
  REQUIRE(padded.padded_vocab() == 128);
  ModelConfig gpt2 = paper(2, 768);
  gpt2.vocab_multiple = 64;
  CHECK(gpt2.padded_vocab() == 50304);
  // counts and FLOPs are the real vocabulary's; memory holds the padding (2 x 31 rows untied)
  CHECK(count_parameters(padded).total == count_parameters(c).total);
  CHECK(flops_per_token(padded) == flops_per_token(c));
  CHECK(count_parameters(padded).allocated == count_parameters(c).total + 2 * 31 * c.width);
  for (bool tie : {false, true}) {
    ModelConfig t = padded;
    t.tie_embeddings = tie;
    INFO("tie=" << tie);
    CHECK(allocated_parameter_count(t) == count_parameters(t).allocated);
  }
  for (std::string impl : {"aten", "fused"}) {
    INFO("block_impl " << impl);
    c.block_impl = padded.block_impl = impl;
    torch::manual_seed(7);
    Transformer a(c);
    torch::manual_seed(7);
    Transformer b(padded);
    // the same random stream: every real weight equal, the padding zero
    auto pa = a->named_parameters(), pb = b->named_parameters();
    for (auto& item : pa) {
      const torch::Tensor& wb = pb[item.key()];
      INFO(item.key());
      CHECK(torch::equal(wb.narrow(0, 0, item.value().size(0)), item.value()));
      if (wb.size(0) != item.value().size(0)) CHECK(wb.narrow(0, 97, 31).abs().max().item<float>() == 0.0f);
    }
    auto tokens = torch::randint(0, 97, {2, 16}, torch::kLong), targets = torch::randint(0, 97, {2, 16}, torch::kLong);
    CHECK(b->forward(tokens).size(-1) == 97);
    CHECK(torch::allclose(a->forward(tokens), b->forward(tokens), 1e-6, 1e-6));
    torch::Tensor la = a->loss(tokens, targets), lb = b->loss(tokens, targets);
    CHECK(la.item<float>() == lb.item<float>());  // on the CPU the padding is cut before the matmul: bit-equal
    la.backward();
    lb.backward();
    for (auto& item : pa) {
      const torch::Tensor& gb = pb[item.key()].grad();
      INFO(item.key());
      CHECK(torch::equal(gb.narrow(0, 0, item.value().size(0)), item.value().grad()));
      if (gb.size(0) != item.value().size(0)) CHECK(gb.narrow(0, 97, 31).abs().max().item<float>() == 0.0f);
    }
  }
}

TEST_CASE("head cross-entropy over padded rows as a GPU runs it (whole matmul, logits cut) equals the unpadded") {
  torch::manual_seed(3);
  auto h = torch::randn({40, 32}).requires_grad_(), w = torch::randn({97, 32}) * 0.1;
  auto wp = torch::cat({w, torch::randn({31, 32})}).requires_grad_();  // padding rows not zero: they must not count
  auto w_real = w.clone().requires_grad_();
  auto t = torch::randint(0, 97, {40}, torch::kLong);
  torch::Tensor lp = head_cross_entropy_unfused(h, wp, t, 97), lr = head_cross_entropy_unfused(h.detach().requires_grad_(), w_real, t);
  CHECK(lp.item<float>() == Approx(lr.item<float>()).epsilon(1e-6));
  lp.backward();
  lr.backward();
  CHECK(torch::allclose(wp.grad().narrow(0, 0, 97), w_real.grad(), 1e-6, 1e-7));
  CHECK(wp.grad().narrow(0, 97, 31).abs().max().item<float>() == 0.0f);
}

TEST_CASE("swiglu hidden width is 8W/3 rounded up to a multiple of 64") {
  ModelConfig c = paper(2, 512);
  CHECK(c.mlp_hidden() == 2048);
  c.mlp = "swiglu";
  CHECK(c.mlp_hidden() == 1408);  // 1365.3 -> 1408
  c.width = 768;
  CHECK(c.mlp_hidden() == 2048);
  // SwiGLU keeps the block near 12 W^2
  c.width = 1024;
  ParamCounts p = count_parameters(c);
  CHECK(std::abs(double(p.non_embedding) / p.paper_12DW2 - 1.0) < 0.02);
}

TEST_CASE("flops per token: 6N plus the attention term") {
  ModelConfig c = paper(16, 512);
  ParamCounts p = count_parameters(c);
  double expected = 6.0 * (p.non_embedding + 50257.0 * 512) + 12.0 * 16 * 512 * 1024;
  CHECK(flops_per_token(c) == Approx(expected));
}

TEST_CASE("config validation names the problem") {
  ModelConfig c = tiny("gelu", "layernorm");
  c.head_dim = 12;
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("must divide width"));
  c = tiny("relu", "layernorm");
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("gelu or swiglu"));
  c = tiny("gelu", "batchnorm");
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("layernorm or rmsnorm"));
  CHECK(model_config_from_json(to_json(tiny("swiglu", "rmsnorm"))).mlp == "swiglu");
}

TEST_CASE("forward: shapes, initial loss near ln V, causality") {
  torch::manual_seed(1);
  for (std::string mlp : {"gelu", "swiglu"}) {
    ModelConfig c = tiny(mlp, mlp == "gelu" ? "layernorm" : "rmsnorm");
    Transformer model(c);
    auto x = torch::randint(0, c.vocab_size, {2, c.seq_len}, torch::kLong);
    auto logits = model->forward(x);
    CHECK(logits.sizes() == torch::IntArrayRef({2, c.seq_len, c.vocab_size}));
    double loss = model->loss(x, x).item<double>();
    CHECK(std::abs(loss - std::log(double(c.vocab_size))) < 0.5);
    // changing the last token must not change any earlier position's logits
    auto y = x.clone();
    y.index_put_({0, c.seq_len - 1}, (x.index({0, c.seq_len - 1}).item<int64_t>() + 1) % c.vocab_size);
    auto logits2 = model->forward(y);
    using torch::indexing::Slice;
    CHECK(torch::allclose(logits.index({Slice(), Slice(0, c.seq_len - 1)}),
                          logits2.index({Slice(), Slice(0, c.seq_len - 1)})));
    CHECK(!torch::allclose(logits.index({0, c.seq_len - 1}), logits2.index({0, c.seq_len - 1})));
  }
}

TEST_CASE("per-layer gradient norms") {
  torch::manual_seed(2);
  ModelConfig c = tiny("gelu", "layernorm");
  Transformer model(c);
  auto x = torch::randint(0, c.vocab_size, {2, c.seq_len}, torch::kLong);
  model->loss(x, x.roll(-1, 1)).backward();
  auto rows = component_grad_norms(*model);
  REQUIRE(rows.size() == size_t(1 + 4 * c.depth + 2));
  for (auto& r : rows) CHECK(r.norm > 0.0);
  // block norm^2 = attn^2 + mlp^2 + norm^2
  double a = rows[1].norm, m = rows[2].norm, n = rows[3].norm;
  CHECK(rows[4].component == "block");
  CHECK(rows[4].norm == Approx(std::sqrt(a * a + m * m + n * n)));
}

#include <nlohmann/json.hpp>

#include "shards/dataset.h"
#include "shards/writer.h"
#include "test_support.h"
#include "train/checkpoint.h"
#include "util/atomic_file.h"

TEST_CASE("a train checkpoint loads back into the model it was saved from") {
  using namespace shapelaw::test;
  TempDir tmp;
  TokenizerInfo tok;
  tok.vocab_size = 50;
  tok.eos_id = 0;
  tok.model_sha256 = std::string(64, 'b');
  ShardOptions opt;
  opt.validation_fraction = 0.2;
  {
    ShardSetWriter writer(tmp.path() + "/shards", tok, opt);
    for (uint32_t d = 0; d < 60; ++d) {
      std::vector<uint32_t> doc;
      for (uint32_t i = 0; i < 70; ++i) doc.push_back(1 + (d * 7 + i * 3) % 49);
      writer.add_document(doc);
    }
    writer.finish();
  }
  const std::string out = tmp.path() + "/run";
  auto r = run(bin("train") + " --data " + tmp.path() + "/shards --out " + out +
               " --depth 1 --width 32 --head-dim 16 --seq-len 16 --micro-batch 2 --batch-tokens 64 --steps 3"
               " --threads 1 --peak-flops 1e10 --val-tokens 170 --log-every 0");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto ckpts = list_checkpoints(out);
  REQUIRE(ckpts.size() == 1);
  CHECK(ckpts[0].first == 3);
  CHECK(read_checkpoint_state(ckpts[0].second)["tokens"] == 3 * 64);
  Transformer model = load_checkpoint_model(ckpts[0].second, torch::kCPU);
  CHECK(model->config.depth == 1);
  CHECK(model->config.vocab_size == 50);
  // the loaded model reproduces the run's final validation loss (10 windows of 17 tokens)
  TokenDataset data = TokenDataset::open(tmp.path() + "/shards");
  auto tokens = data.split("validation").read(0, 10 * 17);
  auto w = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end())).view({10, 17});
  torch::NoGradGuard no_grad;
  double loss = model->loss(w.slice(1, 0, 16), w.slice(1, 1, 17)).item<double>();
  auto summary = nlohmann::json::parse(read_file(out + "/summary.json"));
  CHECK(loss == Approx(summary["final_val_loss"].get<double>()).epsilon(1e-5));
  CHECK_THROWS_WITH(load_checkpoint_model(tmp.path(), torch::kCPU), Catch::Contains("not a complete checkpoint"));
}

TEST_CASE("RoPE rotates each pair (x_i, x_{i+d/2}) and runs in its input's dtype") {
  const int64_t T = 64, d = 16, half = d / 2;
  auto inv_freq = torch::pow(10000.0, -2.0 * torch::arange(0, half, torch::kFloat64) / double(d));
  auto angles = torch::outer(torch::arange(0, T, torch::kFloat64), inv_freq);
  auto c = angles.cos().to(torch::kFloat32), s = angles.sin().to(torch::kFloat32);
  const torch::Tensor cos_full = torch::cat({c, c}, -1), sin_full = torch::cat({-s, s}, -1);
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({2, 3, T, d});
  const torch::Tensor y = apply_rope(x, cos_full, sin_full);
  REQUIRE(y.scalar_type() == torch::kFloat32);
  // a rotation: each pair keeps its length; position 0 is the identity
  auto pair_norms = [&](const torch::Tensor& t) {
    return t.slice(-1, 0, half).square() + t.slice(-1, half).square();
  };
  CHECK(torch::allclose(pair_norms(y), pair_norms(x), 1e-5, 1e-5));
  CHECK(torch::equal(y.select(2, 0), x.select(2, 0)));
  // y_i = x_i cos - x_{i+d/2} sin at position 5, pair 1
  const double a = angles[5][1].item<double>();
  const double x1 = x[0][0][5][1].item<double>(), x9 = x[0][0][5][1 + half].item<double>();
  CHECK(y[0][0][5][1].item<double>() == Approx(x1 * std::cos(a) - x9 * std::sin(a)).margin(1e-6));
  CHECK(y[0][0][5][1 + half].item<double>() == Approx(x9 * std::cos(a) + x1 * std::sin(a)).margin(1e-6));
  // bf16 q and k (autocast on a GPU): the tables go to bf16, the product stays bf16 (before,
  // the fp32 tables promoted it to fp32), within bf16 rounding of the fp32 rotation
  const torch::Tensor xb = x.to(torch::kBFloat16);
  const torch::Tensor yb = apply_rope(xb, cos_full, sin_full);
  CHECK(yb.scalar_type() == torch::kBFloat16);
  const torch::Tensor reference = apply_rope(xb.to(torch::kFloat32), cos_full, sin_full);
  const double error = (yb.to(torch::kFloat32) - reference).abs().max().item<double>();
  const double scale = reference.abs().max().item<double>();
  INFO("max |bf16 - fp32| " << error << " of max |y| " << scale);
  CHECK(error <= 1.5e-2 * scale);  // three bf16 roundings of 2^-9 each, with margin
  CHECK(error > 0);                // it did run in bf16
}
