// The one-pass AdamW (train/fused_adamw.h) and the device step a GPU takes against
// torch::optim::AdamW: same parameters, same state objects, after several steps with
// clipping and two groups.
#include "catch.h"

#include <cmath>
#include <cstdio>
#include <functional>

#include <torch/torch.h>

#include "compat/torch_compat.h"
#include "train/fused_adamw.h"
#include "train/optimizer.h"
#include "train/zero_optimizer.h"

using namespace shapelaw;

namespace {

struct Setup {
  std::vector<torch::Tensor> decay, no_decay;
  std::unique_ptr<torch::optim::AdamW> optimizer;
};

Setup make_setup() {
  torch::manual_seed(5);
  Setup s;
  s.decay = {torch::randn({33, 7}).requires_grad_(true), torch::randn({100000}).requires_grad_(true)};
  s.no_decay = {torch::randn({5}).requires_grad_(true)};
  auto options = [](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(
        torch::optim::AdamWOptions(3e-3).betas({0.9, 0.95}).eps(1e-8).weight_decay(wd));
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(s.decay, options(0.1));
  groups.emplace_back(s.no_decay, options(0.0));
  s.optimizer = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(3e-3));
  return s;
}

void set_gradients(Setup& s, int step) {
  torch::manual_seed(100 + step);
  for (auto* list : {&s.decay, &s.no_decay})
    for (auto& p : *list) p.mutable_grad() = torch::randn_like(p) * (step + 1);
}

// Six steps with clipping (0.3 every other step) taken by `step` on one setup, and by
// torch's own AdamW, the gradients scaled by hand, on another; returns the reference.
// The two must agree, and the optimizer's state count its six steps.
Setup check_six_steps_against_torch(const std::function<void(torch::optim::AdamW&, double)>& step, Setup& s) {
  Setup reference = make_setup();
  for (int i = 0; i < 6; ++i) {
    const double clip = i % 2 ? 0.3 : 1.0;
    set_gradients(s, i);
    set_gradients(reference, i);
    step(*s.optimizer, clip);
    {
      torch::NoGradGuard no_grad;
      for (auto* list : {&reference.decay, &reference.no_decay})
        for (auto& p : *list) p.grad().mul_(clip);
    }
    reference.optimizer->step();
  }
  for (size_t i = 0; i < s.decay.size(); ++i) CHECK(torch::allclose(s.decay[i], reference.decay[i], 1e-5, 1e-6));
  CHECK(torch::allclose(s.no_decay[0], reference.no_decay[0], 1e-5, 1e-6));
  // the state lives in the optimizer, where checkpoints save it from
  REQUIRE(s.optimizer->state().size() == 3);
  for (auto& [key, state] : s.optimizer->state())
    CHECK(static_cast<torch::optim::AdamWParamState&>(*state).step() == 6);
  return reference;
}

}  // namespace

TEST_CASE("fused AdamW takes the same steps as torch::optim::AdamW") {
  Setup fused = make_setup();
  check_six_steps_against_torch([](torch::optim::AdamW& o, double clip) { adamw_step(o, clip); }, fused);
}

TEST_CASE("fused AdamW falls back to optimizer.step for tensors it does not fuse") {
  Setup fused = make_setup(), reference = make_setup();
  // a non-contiguous parameter view is not fused: the whole step goes through torch
  fused.decay[0] = fused.decay[0].detach().t().requires_grad_(true);
  reference.decay[0] = reference.decay[0].detach().t().requires_grad_(true);
  torch::optim::AdamW f({fused.decay[0]}, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  torch::optim::AdamW r({reference.decay[0]}, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
  fused.decay[0].mutable_grad() = torch::ones_like(fused.decay[0]);
  reference.decay[0].mutable_grad() = torch::ones_like(reference.decay[0]) * 0.5;
  adamw_step(f, 0.5);
  r.step();
  CHECK(torch::equal(fused.decay[0], reference.decay[0]));
}

TEST_CASE("the device AdamW step takes torch::optim::AdamW's steps, with the clip scale a tensor") {
  // what a GPU runs: ATen's fused multi-tensor kernel where this LibTorch has it for the
  // device (2.4 and later on the CPU too), else torch's operations tensor by tensor
  const bool fused_kernel = compat::has_fused_adamw(torch::kCPU);
  std::printf("device AdamW step on this LibTorch (%s): %s\n", compat::torch_version().c_str(),
              fused_kernel ? "ATen's fused kernel" : "torch's operations tensor by tensor");
  Setup device = make_setup();
  const Setup reference = check_six_steps_against_torch(
      [](torch::optim::AdamW& o, double clip) {
        adamw_step_on_device(o, torch::scalar_tensor(clip, torch::kFloat64));  // the kernel reads the step
      },
      device);
  // a wrong step count (bias correction of step 1 every time) would be far outside
  Setup stale = make_setup();
  for (int step = 0; step < 6; ++step) {
    set_gradients(stale, step);
    for (auto& [key, state] : stale.optimizer->state()) static_cast<torch::optim::AdamWParamState&>(*state).step(0);
    adamw_step_on_device(*stale.optimizer, torch::scalar_tensor(step % 2 ? 0.3 : 1.0, torch::kFloat64));
  }
  CHECK_FALSE(torch::allclose(stale.decay[1], reference.decay[1], 1e-5, 1e-6));
}

TEST_CASE("clip_scale_for: the host's clipping factor computed on the device, bit for bit") {
  auto scale = [](double norm, double max_norm) {
    return clip_scale_for(torch::scalar_tensor(norm, torch::kFloat64), max_norm).item<double>();
  };
  CHECK(scale(2.5, 1.0) == 1.0 / (2.5 + 1e-6));  // the expression the trainer used on the host
  CHECK(scale(0.7, 1.0) == 1.0);                  // below the limit: exactly 1, no rounding
  CHECK(scale(1.0, 1.0) == 1.0);                  // at the limit: not clipped (norm > max only)
  CHECK(scale(50.0, 0.0) == 1.0);                 // --grad-clip 0: never
  CHECK(scale(std::nan(""), 1.0) == 1.0);         // a NaN norm: the divergence check stops the run
}

TEST_CASE("gradient_norm: one multi-tensor kernel (a GPU's) gives the per-tensor norm, and absent gradients are skipped") {
  torch::manual_seed(11);
  std::vector<torch::Tensor> params;
  for (int64_t n : {7, 1000, 33 * 65, 1, 100000}) {
    params.push_back(torch::randn({n}).requires_grad_(true));
    params.back().mutable_grad() = torch::randn({n}) * double(n % 7 + 1);
  }
  params.push_back(torch::randn({5}).requires_grad_(true));  // no gradient: not counted
  double squares = 0;
  for (size_t i = 0; i + 1 < params.size(); ++i) squares += params[i].grad().to(torch::kFloat64).square().sum().item<double>();
  const torch::Tensor each = gradient_norm(params, /*foreach=*/false), fused = gradient_norm(params, /*foreach=*/true);
  CHECK(each.scalar_type() == torch::kFloat64);
  CHECK(fused.scalar_type() == torch::kFloat64);
  CHECK(each.dim() == 0);
  CHECK(each.item<double>() == Approx(std::sqrt(squares)).epsilon(1e-6));
  CHECK(fused.item<double>() == Approx(each.item<double>()).epsilon(1e-6));
  CHECK(gradient_norm({params.back()}, true).item<double>() == 0.0);
}

// On one rank ZeRO must clip by the very factor plain AdamW does: the first GPU run
// (docs/benchmarks.md) found ZeRO-1 and -2 off plain by 0.04 and 0.12 in loss over 20 bf16
// steps, from the norm alone (per-piece and whole-slice kernels beside plain's per-tensor
// multi-tensor one); bf16 turns a last-bit difference in the clip into a different run.
TEST_CASE("ZeRO on one rank: the clip norm is plain AdamW's, bit for bit, at stages 1 and 2") {
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    torch::manual_seed(17);
    std::vector<torch::Tensor> params, plain, weights;
    for (int64_t n : {7 * 33, 1000, 5, 100000}) {
      params.push_back(torch::randn({n}).requires_grad_(true));
      plain.push_back(params.back().detach().clone().requires_grad_(true));
      weights.push_back(torch::randn({n}) * double(n % 5 + 1));
    }
    auto loss_of = [&](const std::vector<torch::Tensor>& ps) {
      torch::Tensor loss = torch::zeros({});
      for (size_t i = 0; i < ps.size(); ++i) loss = loss + (ps[i] * ps[i] * weights[i]).sum();
      return loss;
    };
    const std::vector<ShardSettings> settings(params.size(), ShardSettings{1.0, 0.1, 1e-8});
    ShardedAdamW zero(params, settings, 0.9, 0.95, Distributed::single(), stage);
    zero.begin_gradients();
    loss_of(params).backward();  // stage 2: the hooks move each .grad into the slice
    zero.end_micro_batch();
    loss_of(plain).backward();
    CHECK(zero.reduce_gradients().item<double>() == gradient_norm(plain, /*foreach=*/false).item<double>());
  }
}
