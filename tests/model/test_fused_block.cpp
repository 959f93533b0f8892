// --block-impl fused (model/fused_block.h) against the ATen block: the same loss and
// gradients up to float rounding for every block option, composition with activation
// checkpointing, and the ATen block where the fused one does not apply.
#include "catch.h"

#include <cmath>

#include <torch/torch.h>

#include "kernels/kernel_set.h"
#include "model/head_loss.h"
#include "model/model.h"
#include "model/model_config.h"

using namespace shapelaw;

namespace {

struct Pass {
  double loss;
  std::vector<std::pair<std::string, torch::Tensor>> grads;
};

// One forward and backward of a fixed batch through a model whose weights are drawn from
// `seed`, so that an aten and a fused model start from the same weights.
Pass run(ModelConfig c, const std::string& impl, bool checkpointing, int64_t T, torch::Dtype dtype = torch::kFloat32) {
  c.block_impl = impl;
  torch::manual_seed(7);
  Transformer model(c);
  model->to(dtype);
  model->activation_checkpointing = checkpointing;
  // larger-than-init weights everywhere (gains, shifts and biases too) so that every
  // term of the backward pass is exercised
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.3);
  }
  torch::manual_seed(11);
  auto tokens = torch::randint(0, c.vocab_size, {3, T}, torch::kLong);
  auto targets = torch::randint(0, c.vocab_size, {3, T}, torch::kLong);
  auto loss = model->loss(tokens, targets);
  loss.backward();
  Pass r{loss.item<double>(), {}};
  for (auto& item : model->named_parameters()) r.grads.push_back({item.key(), item.value().grad().clone()});
  return r;
}

double relative_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).to(torch::kFloat64).norm().item<double>() / (b.to(torch::kFloat64).norm().item<double>() + 1e-30);
}

void check_close(const Pass& fused, const Pass& aten, double tolerance) {
  CHECK(std::abs(fused.loss - aten.loss) <= tolerance * std::abs(aten.loss));
  REQUIRE(fused.grads.size() == aten.grads.size());
  for (size_t i = 0; i < aten.grads.size(); ++i) {
    INFO(aten.grads[i].first);
    CHECK(relative_difference(fused.grads[i].second, aten.grads[i].second) < tolerance);
  }
}

void check_identical(const Pass& a, const Pass& b) {
  CHECK(a.loss == b.loss);
  REQUIRE(a.grads.size() == b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i) {
    INFO(a.grads[i].first);
    CHECK(torch::equal(a.grads[i].second, b.grads[i].second));
  }
}

ModelConfig shape(int width, int head_dim, int seq) {
  ModelConfig c;
  c.depth = 2;
  c.width = width;
  c.head_dim = head_dim;
  c.vocab_size = 61;
  c.seq_len = seq;
  return c;
}

}  // namespace

TEST_CASE("fused block: loss and every gradient equal the aten block's to 1e-5, every block option and kernel") {
  struct Case {
    int width, head_dim, seq, T;  // T: the batch's length, <= seq
    const char *mlp, *norm, *param;
    bool bias;
  };
  // batches of 3: 3 T rows, a multiple of 4 or not (the kernel layer's GEMM or ATen's)
  const Case cases[] = {
      {16, 16, 64, 64, "gelu", "layernorm", "sp", false},          // the micro-study's block
      {12, 4, 16, 7, "gelu", "layernorm", "sp", true},             // 3 heads, odd length, shorter than seq
      {6, 2, 9, 9, "swiglu", "rmsnorm", "mup", true},              // head dim 2, attention scale 1/d
      {24, 8, 40, 37, "swiglu", "layernorm", "completep", false},  // residual multiplier != 1
      {16, 8, 20, 20, "gelu", "rmsnorm", "completep", true},
  };
  const Isa chosen = kernel_isa();
  for (const Isa isa : isas_runnable_here()) {
    use_isa_for_testing(isa);
    const std::string kernels = isa_name(isa);
    for (const Case& k : cases) {
      ModelConfig c = shape(k.width, k.head_dim, k.seq);
      c.mlp = k.mlp, c.norm = k.norm, c.param = k.param, c.bias = k.bias;
      if (c.param == std::string("completep")) c.base_depth = 1, c.base_width = 8;
      INFO(kernels << " kernels, " << k.width << "W head " << k.head_dim << " T " << k.T << " " << k.mlp << " "
                   << k.norm << " " << k.param << (k.bias ? " bias" : ""));
      check_close(run(c, "fused", false, k.T), run(c, "aten", false, k.T), 1e-5);
    }
  }
  use_isa_for_testing(chosen);
}

TEST_CASE("fused block: the micro-study's block on two threads") {
  const int threads_before = torch::get_num_threads();
  torch::set_num_threads(2);
  const ModelConfig c = shape(16, 16, 64);
  check_close(run(c, "fused", false, 64), run(c, "aten", false, 64), 1e-5);
  torch::set_num_threads(threads_before);
}

TEST_CASE("fused block: with activation checkpointing, gradients bit-identical to fused without") {
  ModelConfig c = shape(16, 8, 24);
  c.mlp = "swiglu", c.bias = true;
  const Pass plain = run(c, "fused", false, 24), recomputed = run(c, "fused", true, 24);
  check_identical(recomputed, plain);
  check_close(recomputed, run(c, "aten", true, 24), 1e-5);
}

TEST_CASE("fused block: no gradient wanted, the same logits, and where it does not apply the aten block") {
  ModelConfig c = shape(16, 8, 12);
  auto logits = [&](const std::string& impl) {
    c.block_impl = impl;
    torch::manual_seed(3);
    Transformer model(c);
    torch::NoGradGuard no_grad;
    return model->forward(torch::arange(0, 24, torch::kLong).remainder(c.vocab_size).view({2, 12}));
  };
  CHECK(relative_difference(logits("fused"), logits("aten")) < 1e-5);
  // float64 is not the fused block's: it falls back, so the result is the aten block's exactly
  check_identical(run(c, "fused", false, 12, torch::kFloat64), run(c, "aten", false, 12, torch::kFloat64));
}

TEST_CASE("fused block: block_impl is validated and written to JSON only when not aten") {
  ModelConfig c = shape(16, 8, 12);
  CHECK_FALSE(to_json(c).contains("block_impl"));
  c.block_impl = "fused";
  CHECK(to_json(c).at("block_impl") == "fused");
  CHECK(model_config_from_json(to_json(c)).block_impl == "fused");
  c.block_impl = "triton";
  CHECK_THROWS_WITH(c.validate(), Catch::Contains("block_impl must be aten or fused"));
}

TEST_CASE("fused block: the small-width head equals the plain composition, any row count and thread count") {
  const int threads_before = torch::get_num_threads();
  for (int64_t width : {4, 8, 16, 32})
    for (int64_t rows : {1, 37, 300})
      for (int threads : {1, 2}) {
        INFO(width << "W, " << rows << " rows, " << threads << " threads");
        torch::set_num_threads(threads);
        torch::manual_seed(5);
        auto h = torch::randn({rows, width}).requires_grad_(true), w = torch::randn({203, width}).requires_grad_(true);
        auto y = torch::randint(0, 203, {rows}, torch::kLong);
        auto loss = head_cross_entropy(h, w, y, /*small_width=*/true);
        loss.backward();
        auto h0 = h.detach().clone().requires_grad_(true), w0 = w.detach().clone().requires_grad_(true);
        auto plain = head_cross_entropy_unfused(h0, w0, y);
        plain.backward();
        CHECK(std::abs(loss.item<double>() - plain.item<double>()) < 1e-5 * std::abs(plain.item<double>()));
        CHECK(relative_difference(h.grad(), h0.grad()) < 1e-5);
        CHECK(relative_difference(w.grad(), w0.grad()) < 1e-5);
      }
  torch::set_num_threads(threads_before);
}
