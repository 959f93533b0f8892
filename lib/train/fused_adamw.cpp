#include "train/fused_adamw.h"

#include <cmath>

#include <ATen/Parallel.h>

#include "compat/torch_compat.h"
#include "kernels/adamw.h"

namespace shapelaw {
namespace {

// A CPU fp32 contiguous tensor shaped like p: what the raw loop may read and write.
bool plain_like(const torch::Tensor& t, const torch::Tensor& p) {
  return t.defined() && !t.is_sparse() && t.device().is_cpu() && t.scalar_type() == torch::kFloat32 &&
         t.is_contiguous() && t.sizes() == p.sizes();
}

// The optimizer's state for p, or nullptr before p's first step.
torch::optim::AdamWParamState* find_state(torch::optim::AdamW& optimizer, const torch::Tensor& p) {
  auto& states = optimizer.state();
  auto it = states.find(compat::optimizer_state_key<std::decay_t<decltype(states)>>(p));
  return it == states.end() ? nullptr : static_cast<torch::optim::AdamWParamState*>(it->second.get());
}

bool fusable(torch::optim::AdamW& optimizer, const torch::Tensor& p) {
  if (!plain_like(p, p) || !plain_like(p.grad(), p)) return false;
  const auto* state = find_state(optimizer, p);  // none yet: created below, as AdamW would
  return !state || (plain_like(state->exp_avg(), p) && plain_like(state->exp_avg_sq(), p));  // e.g. a loaded optimizer.pt
}

// The optimizer's state for p, created as AdamW::step creates it.
torch::optim::AdamWParamState& state_of(torch::optim::AdamW& optimizer, const torch::Tensor& p) {
  if (auto* state = find_state(optimizer, p)) return *state;
  auto state = std::make_unique<torch::optim::AdamWParamState>();
  state->step(0);
  state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
  auto& states = optimizer.state();
  auto& slot = states[compat::optimizer_state_key<std::decay_t<decltype(states)>>(p)];
  slot = std::move(state);
  return static_cast<torch::optim::AdamWParamState&>(*slot);
}

}  // namespace

void adamw_step(torch::optim::AdamW& optimizer, double clip_scale) {
  bool fused = true;
  for (auto& group : optimizer.param_groups()) {
    if (static_cast<torch::optim::AdamWOptions&>(group.options()).amsgrad()) fused = false;
    for (auto& p : group.params())
      if (p.grad().defined() && !fusable(optimizer, p)) fused = false;
  }
  torch::NoGradGuard no_grad;
  if (!fused) {
    if (clip_scale != 1.0)
      for (auto& group : optimizer.param_groups())
        for (auto& p : group.params())
          if (p.grad().defined()) p.grad().mul_(clip_scale);
    optimizer.step();
    return;
  }
  for (auto& group : optimizer.param_groups()) {
    const auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
    const AdamWHyper h{o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay()};
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(optimizer, p);
      state.step(state.step() + 1);
      // written through raw pointers: tell autograd these tensors changed, as in-place ops would
      torch::autograd::impl::bump_version(p);
      torch::autograd::impl::bump_version(state.exp_avg());
      torch::autograd::impl::bump_version(state.exp_avg_sq());
      adamw_update(p.data_ptr<float>(), p.grad().data_ptr<float>(), state.exp_avg().data_ptr<float>(),
                   state.exp_avg_sq().data_ptr<float>(), p.numel(), h, state.step(), clip_scale);
    }
  }
}

void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWHyper& h, int64_t step,
                  double clip_scale) {
  const double correction1 = 1.0 - std::pow(h.beta1, double(step));
  const double correction2 = 1.0 - std::pow(h.beta2, double(step));
  const AdamWCoefficients c{float(1.0 - h.lr * h.weight_decay), float(h.beta1), float(h.beta2), float(clip_scale),
                       float(1.0 - h.beta1), float(1.0 - h.beta2), float(std::sqrt(correction2)), float(h.eps),
                       float(h.lr / correction1)};
  at::parallel_for(0, n, /*grain_size=*/1 << 15, [&](int64_t begin, int64_t end) {
    adamw_range(param + begin, grad + begin, m + begin, v + begin, end - begin, c);
  });
}

}  // namespace shapelaw
