// Activation recomputation (model/recompute.h): the same gradients bit for bit, less
// peak memory; and the plan's activation estimate (plan/memory_plan.h) against the peak
// the CPU allocator meter measures (train/memory_meter.h), with and without it.
#include "catch.h"

#include <cstdio>

#include <torch/torch.h>

#include "model/model.h"
#include "plan/memory_plan.h"
#include "train/memory_meter.h"

using namespace shapelaw;

namespace {

struct Pass {
  double loss;
  std::vector<torch::Tensor> grads;
  int64_t peak;  // bytes above what was in use before the forward pass
};

// One forward and backward of a fixed batch, gradients accumulated into zeroed ones
// (allocated by an earlier pass, as in every micro-batch after a step's first).
Pass run_pass(Transformer& model, const torch::Tensor& x, const torch::Tensor& y) {
  for (auto& p : model->parameters())
    if (p.grad().defined()) p.mutable_grad().zero_();
  const torch::Device cpu(torch::kCPU);
  reset_peak_memory(cpu);
  const int64_t before = memory_in_use(cpu);
  auto loss = model->loss(x, y);
  loss.backward();
  Pass r{loss.item<double>(), {}, peak_memory(cpu) - before};
  for (auto& p : model->parameters()) r.grads.push_back(p.grad().clone());
  return r;
}

}  // namespace

TEST_CASE("activation checkpointing: gradients bit-identical, peak memory lower, both near the plan") {
  install_cpu_memory_meter();
  at::set_num_threads(1);  // the same reduction order in both passes
  ModelConfig c;
  c.depth = 4;
  c.width = 128;
  c.head_dim = 32;
  c.vocab_size = 2048;
  c.seq_len = 128;
  const int64_t micro = 8;
  torch::manual_seed(3);
  Transformer model(c);
  model->train();
  auto x = torch::randint(0, c.vocab_size, {micro, c.seq_len}, torch::kLong);
  auto y = torch::randint(0, c.vocab_size, {micro, c.seq_len}, torch::kLong);
  run_pass(model, x, y);  // allocates the gradients
  Pass plain = run_pass(model, x, y);
  model->activation_checkpointing = true;
  Pass recomputed = run_pass(model, x, y);
  CHECK(plain.loss == recomputed.loss);
  REQUIRE(plain.grads.size() == recomputed.grads.size());
  for (size_t i = 0; i < plain.grads.size(); ++i) CHECK(torch::equal(plain.grads[i], recomputed.grads[i]));
  // evaluation ignores the flag: no graph, nothing to recompute
  {
    torch::NoGradGuard no_grad;
    const double with_flag = model->loss(x, y).item<double>();
    model->activation_checkpointing = false;
    CHECK(model->loss(x, y).item<double>() == with_flag);
  }

  PlanOptions o;
  o.model = c;
  o.micro_batch = micro;
  o.batch_tokens = micro * c.seq_len;
  ActivationBytes planned = activation_bytes(o, micro);
  std::printf("activations, %dL x %dW, seq %d, micro-batch %lld, CPU fp32: measured peak %.1f MB plain, "
              "%.1f MB recomputed; plan %.1f MB, %.1f MB\n",
              c.depth, c.width, c.seq_len, (long long)micro, plain.peak / 1e6, recomputed.peak / 1e6,
              planned.without_recompute / 1e6, planned.with_recompute / 1e6);
  CHECK(recomputed.peak < plain.peak * 0.6);
  CHECK(double(planned.without_recompute) == Approx(double(plain.peak)).epsilon(0.25));
  CHECK(double(planned.with_recompute) == Approx(double(recomputed.peak)).epsilon(0.25));
}
