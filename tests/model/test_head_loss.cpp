// The fused head + cross-entropy (model/head_loss.h) against the plain LibTorch
// composition: same loss, same gradients, same dispatch rules.
#include "catch.h"


#include <torch/torch.h>

#include "kernels/kernel_set.h"
#include "model/head_loss.h"
#include "model/model_config.h"

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

TEST_CASE("chunked head cross-entropy (the GPU's path) equals the plain composition, chunks and padding whatever") {
  torch::manual_seed(5);
  const int64_t n = 40, vocab = 97, padded = 128, width = 24;
  auto h0 = torch::randn({n, width}) * 2.0;
  auto w0 = torch::randn({padded, width}) * 0.5;  // rows past vocab: padding, not zero, must not count
  auto y = torch::randint(0, vocab, {n}, torch::kLong);
  auto h = h0.clone().requires_grad_(true), w = w0.narrow(0, 0, vocab).clone().requires_grad_(true);
  auto reference = head_cross_entropy_unfused(h, w, y);
  (reference * 0.5).backward();
  for (int64_t chunk : {int64_t(7), int64_t(40), int64_t(64), int64_t(0)}) {  // 7: the last chunk short; 0: the default
    INFO("chunk rows " << chunk);
    auto hc = h0.clone().requires_grad_(true), wc = w0.clone().requires_grad_(true);
    auto loss = head_cross_entropy_chunked(hc, wc, y, vocab, chunk);
    (loss * 0.5).backward();
    CHECK(loss.item<double>() == Approx(reference.item<double>()).epsilon(1e-6));
    CHECK(torch::allclose(hc.grad(), h.grad(), 1e-5, 1e-7));
    CHECK(torch::allclose(wc.grad().narrow(0, 0, vocab), w.grad(), 1e-5, 1e-7));
    CHECK(wc.grad().narrow(0, vocab, padded - vocab).abs().max().item<float>() == 0.0f);
  }
  CHECK(head_chunk_rows(50257) == 1280);  // 1280 x 50257 fp32 logits: just under 256 MiB a chunk
  CHECK(head_chunk_rows(int64_t(1) << 30) == 64);
}

TEST_CASE("chunked head cross-entropy from bf16 logits (a GPU's autocast): the softmax in fp32, the loss and gradients within bf16's rounding") {
  torch::manual_seed(6);
  const int64_t n = 48, vocab = 90, padded = 96, width = 16;
  auto h0 = torch::randn({n, width}), w0 = torch::randn({padded, width}) * 0.5;
  auto y = torch::randint(0, vocab, {n}, torch::kLong);
  auto h = h0.clone().requires_grad_(true), w = w0.narrow(0, 0, vocab).clone().requires_grad_(true);
  auto reference = head_cross_entropy_unfused(h, w, y);
  reference.backward();
  auto hb = h0.to(torch::kBFloat16).requires_grad_(true), wb = w0.to(torch::kBFloat16).requires_grad_(true);
  auto loss = head_cross_entropy_chunked(hb, wb, y, vocab, 16);
  loss.backward();
  CHECK(loss.scalar_type() == torch::kFloat32);  // the loss summed in fp32, not bf16's 8 bits
  CHECK(loss.item<double>() == Approx(reference.item<double>()).epsilon(2e-2));
  CHECK(torch::allclose(hb.grad().to(torch::kFloat32), h.grad(), 5e-2, 2e-3));
  CHECK(torch::allclose(wb.grad().narrow(0, 0, vocab).to(torch::kFloat32), w.grad(), 5e-2, 2e-3));
  CHECK(wb.grad().narrow(0, vocab, padded - vocab).abs().max().item<float>() == 0.0f);
}

TEST_CASE("chunked evaluation head (a GPU's no-grad path) equals the plain composition, chunks and padding whatever") {
  // why chunked: the plain composition holds N x V fp32 logits and
  // log-probabilities at once, 8 GB at micro-batch 16 and GPT-2's vocabulary
  torch::manual_seed(7);
  const int64_t n = 40, vocab = 97, padded = 128, width = 24;
  torch::NoGradGuard no_grad;
  auto h = torch::randn({n, width}) * 2.0, w = torch::randn({padded, width}) * 0.5;
  auto y = torch::randint(0, vocab, {n}, torch::kLong);
  const double reference = head_cross_entropy_unfused(h, w.narrow(0, 0, vocab), y).item<double>();
  for (int64_t chunk : {int64_t(7), int64_t(40), int64_t(64), int64_t(0)}) {
    INFO("chunk rows " << chunk);
    auto loss = head_cross_entropy_eval_chunked(h, w, y, vocab, chunk);
    CHECK(loss.scalar_type() == torch::kFloat32);
    CHECK(loss.item<double>() == Approx(reference).epsilon(1e-6));
  }
  // bf16 inputs (autocast's): the log-softmax in fp32, within bf16's rounding of the logits
  auto bf = head_cross_entropy_eval_chunked(h.to(torch::kBFloat16), w.to(torch::kBFloat16), y, vocab, 16);
  CHECK(bf.scalar_type() == torch::kFloat32);
  CHECK(bf.item<double>() == Approx(reference).epsilon(2e-2));
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

TEST_CASE("fused head: which path a width takes is the same whichever kernel body runs") {
  const Isa chosen = kernel_isa();
  std::vector<std::string> first;
  for (const Isa isa : isas_runnable_here()) {
    use_isa_for_testing(isa);
    std::vector<std::string> paths;
    for (int64_t width : {8, 16, 24, 32, 48, 64}) {
      auto h = torch::randn({8, width}).requires_grad_(true), w = torch::randn({40, width}).requires_grad_(true);
      auto y = torch::randint(0, 40, {8}, torch::kLong);
      paths.push_back(head_cross_entropy(h, w, y, /*small_width=*/true).grad_fn()->name());
    }
    INFO(isa_name(isa) << " body");
    CHECK(paths[1].find("SmallWidthHead") != std::string::npos);   // 16
    CHECK(paths[3].find("SmallWidthHead") != std::string::npos);   // 32
    CHECK(paths[5].find("FusedHeadCrossEntropy") != std::string::npos);  // 64, as on AVX2 before
    if (first.empty()) first = paths;
    CHECK(paths == first);
  }
  use_isa_for_testing(chosen);
}
