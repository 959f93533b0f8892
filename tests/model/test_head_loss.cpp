// The fused head + cross-entropy (model/head_loss.h) against the plain LibTorch
// composition: same loss, same gradients, same dispatch rules.
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "model/head_loss.h"
#include "model/softmax_rows.h"

using namespace shapelaw;

namespace {
struct Grads {
  torch::Tensor loss, dh, dw;
};
Grads run(bool fused, const torch::Tensor& h0, const torch::Tensor& w0, const torch::Tensor& y, double scale) {
  auto h = h0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true);
  auto loss = fused ? head_cross_entropy(h, w, y) : head_cross_entropy_unfused(h, w, y);
  (loss * scale).backward();
  return {loss.detach(), h.grad(), w.grad()};
}
}  // namespace

TEST_CASE("fused head cross-entropy equals log_softmax + nll in loss and both gradients") {
  torch::manual_seed(3);
  // rows not a multiple of the block size, a vocabulary not a power of two, large logits
  for (auto [n, vocab, width, spread] : {std::tuple{37, 101, 16, 1.0}, std::tuple{300, 1000, 24, 8.0},
                                         std::tuple{5, 70000, 8, 3.0}}) {
    auto h = torch::randn({n, width}, torch::kFloat64).to(torch::kFloat32) * spread;
    auto w = torch::randn({vocab, width}) * 0.5;
    auto y = torch::randint(0, vocab, {n}, torch::kLong);
    const auto a = run(true, h, w, y, 0.25), b = run(false, h, w, y, 0.25);
    INFO("n " << n << " vocab " << vocab);
    CHECK(a.loss.item<double>() == Approx(b.loss.item<double>()).epsilon(1e-5));
    CHECK(torch::allclose(a.dh, b.dh, 1e-4, 1e-6));
    CHECK(torch::allclose(a.dw, b.dw, 1e-4, 1e-6));
  }
}

TEST_CASE("fused head cross-entropy is used only where it applies") {
  auto h = torch::randn({4, 8}), w = torch::randn({11, 8}).requires_grad_(true);
  auto y = torch::randint(0, 11, {4}, torch::kLong);
  auto fused = head_cross_entropy(h, w, y);
  REQUIRE(fused.grad_fn());
  CHECK(fused.grad_fn()->name().find("FusedHeadCrossEntropy") != std::string::npos);
  {
    torch::NoGradGuard no_grad;  // evaluation: the plain path, nothing kept for backward
    auto plain = head_cross_entropy(h, w, y);
    CHECK_FALSE(plain.requires_grad());
    CHECK(plain.item<double>() == Approx(fused.item<double>()).epsilon(1e-6));
  }
  auto h64 = h.to(torch::kFloat64).requires_grad_(true), w64 = w.detach().to(torch::kFloat64);
  auto plain64 = head_cross_entropy(h64, w64, y);  // not fp32: the plain composition
  CHECK(plain64.grad_fn()->name().find("Fused") == std::string::npos);
}

TEST_CASE("softmax rows: every kernel this CPU runs matches a double-precision softmax") {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const auto& kernel : softmax_rows_kernels()) {
    // widths around the vector lengths (tails), large spreads (underflow to 0), a row of equal logits
    for (int64_t vocab : {1, 3, 15, 16, 17, 33, 1000}) {
      const int64_t rows = 5;
      std::vector<float> logits(size_t(rows * vocab)), log_normalizer(rows);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < vocab; ++j) logits[size_t(r * vocab + j)] = r == 4 ? 2.5f : normal(rng) * float(5 * r + 1);
      const std::vector<float> original = logits;
      kernel.run(logits.data(), rows, vocab, 0.5f, log_normalizer.data());
      for (int64_t r = 0; r < rows; ++r) {
        const float* x = original.data() + r * vocab;
        const double max = *std::max_element(x, x + vocab);
        double sum = 0;
        for (int64_t j = 0; j < vocab; ++j) sum += std::exp(double(x[j]) - max);
        INFO(kernel.name << " vocab " << vocab << " row " << r);
        CHECK(log_normalizer[size_t(r)] == Approx(max + std::log(sum)).epsilon(1e-6).margin(1e-6));
        double worst = 0;
        for (int64_t j = 0; j < vocab; ++j) {
          const double want = 0.5 * std::exp(double(x[j]) - max) / sum;
          worst = std::max(worst, std::abs(logits[size_t(r * vocab + j)] - want) / std::max(want, 1e-30));
        }
        CHECK(worst < 1e-5);
      }
    }
  }
  CHECK(std::string(softmax_rows_kernels().back().name) == "portable");
}
