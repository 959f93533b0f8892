// The one-pass AdamW (train/fused_adamw.h) against torch::optim::AdamW: same
// parameters, same state objects, after several steps with clipping and two groups.
#include "catch.h"

#include <torch/torch.h>

#include "train/fused_adamw.h"

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

}  // namespace

TEST_CASE("fused AdamW takes the same steps as torch::optim::AdamW") {
  Setup fused = make_setup(), reference = make_setup();
  for (int step = 0; step < 6; ++step) {
    const double clip = step % 2 ? 0.3 : 1.0;
    set_gradients(fused, step);
    set_gradients(reference, step);
    adamw_step(*fused.optimizer, clip);
    {
      torch::NoGradGuard no_grad;
      for (auto* list : {&reference.decay, &reference.no_decay})
        for (auto& p : *list) p.grad().mul_(clip);
    }
    reference.optimizer->step();
  }
  for (size_t i = 0; i < fused.decay.size(); ++i)
    CHECK(torch::allclose(fused.decay[i], reference.decay[i], 1e-5, 1e-6));
  CHECK(torch::allclose(fused.no_decay[0], reference.no_decay[0], 1e-5, 1e-6));
  // the state lives in the optimizer, where checkpoints save it from
  REQUIRE(fused.optimizer->state().size() == 3);
  for (auto& [key, state] : fused.optimizer->state())
    CHECK(static_cast<torch::optim::AdamWParamState&>(*state).step() == 6);
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
