#include "train/fused_adamw.h"

#include <array>
#include <cmath>
#include <map>

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

bool any_amsgrad(torch::optim::AdamW& optimizer) {
  for (auto& group : optimizer.param_groups())
    if (static_cast<torch::optim::AdamWOptions&>(group.options()).amsgrad()) return true;
  return false;
}

AdamWHyper hyper_of(torch::optim::OptimizerParamGroup& group) {
  const auto& o = static_cast<torch::optim::AdamWOptions&>(group.options());
  return {o.lr(), std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay()};
}

// What nothing here fuses: the gradients scaled (a double or a device tensor), torch's step.
template <class Scale>
void scaled_torch_step(torch::optim::AdamW& optimizer, const Scale& clip_scale) {
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params())
      if (p.grad().defined()) p.grad().mul_(clip_scale);
  optimizer.step();
}

}  // namespace

void adamw_step(torch::optim::AdamW& optimizer, double clip_scale) {
  bool fused = !any_amsgrad(optimizer);
  for (auto& group : optimizer.param_groups())
    for (auto& p : group.params())
      if (p.grad().defined() && !fusable(optimizer, p)) fused = false;
  torch::NoGradGuard no_grad;
  if (!fused) {
    if (clip_scale != 1.0) return scaled_torch_step(optimizer, clip_scale);
    optimizer.step();
    return;
  }
  for (auto& group : optimizer.param_groups()) {
    const AdamWHyper h = hyper_of(group);
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

void adamw_step(torch::optim::AdamW& optimizer, const torch::Tensor& clip_scale) {
  if (clip_scale.device().is_cpu()) return adamw_step(optimizer, clip_scale.item<double>());
  adamw_step_on_device(optimizer, clip_scale);
}

void adamw_step_on_device(torch::optim::AdamW& optimizer, const torch::Tensor& clip_scale) {
  torch::NoGradGuard no_grad;
  if (any_amsgrad(optimizer)) return scaled_torch_step(optimizer, clip_scale);
  for (auto& group : optimizer.param_groups()) {
    const AdamWHyper h = hyper_of(group);
    // tensors at the same step go in one call (every tensor steps together in a run; a
    // loaded optimizer.pt could in principle differ)
    std::map<int64_t, std::array<std::vector<torch::Tensor>, 4>> by_step;
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(optimizer, p);
      state.step(state.step() + 1);
      auto& lists = by_step[state.step()];
      lists[0].push_back(p);
      lists[1].push_back(p.grad());
      lists[2].push_back(state.exp_avg());
      lists[3].push_back(state.exp_avg_sq());
    }
    for (auto& [step, lists] : by_step) adamw_update(lists[0], lists[1], lists[2], lists[3], h, step, clip_scale);
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

void adamw_update(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                  const std::vector<torch::Tensor>& exp_avgs, const std::vector<torch::Tensor>& exp_avg_sqs,
                  const AdamWHyper& h, int64_t step, const torch::Tensor& clip_scale) {
  torch::NoGradGuard no_grad;
  if (params.empty()) return;
  const torch::Device device = params.front().device();
  bool fused = compat::has_fused_adamw(device);
  for (const auto* list : {&params, &grads, &exp_avgs, &exp_avg_sqs})
    for (auto& t : *list)
      if (t.device() != device || t.scalar_type() != torch::kFloat32 || !t.is_contiguous()) fused = false;
  if (fused) {
    // the kernel divides by its scale: the reciprocal of the clip scale
    const torch::Tensor step_t = torch::full({}, double(step), torch::TensorOptions().dtype(torch::kFloat32).device(device));
    const std::vector<torch::Tensor> steps(params.size(), step_t);
    compat::fused_adamw(params, grads, exp_avgs, exp_avg_sqs, steps, h.lr, h.beta1, h.beta2, h.weight_decay, h.eps,
                        clip_scale.reciprocal().to(torch::kFloat32));
    return;
  }
  const double c1 = 1.0 - std::pow(h.beta1, double(step)), c2 = 1.0 - std::pow(h.beta2, double(step));
  for (size_t i = 0; i < params.size(); ++i) {
    torch::Tensor p = params[i], m = exp_avgs[i], v = exp_avg_sqs[i];
    const torch::Tensor g = grads[i] * clip_scale;
    p.mul_(1.0 - h.lr * h.weight_decay);
    m.mul_(h.beta1).add_(g, 1.0 - h.beta1);
    v.mul_(h.beta2).addcmul_(g, g, 1.0 - h.beta2);
    p.addcdiv_(m, (v.sqrt() / std::sqrt(c2)).add_(h.eps), -h.lr / c1);
  }
}

}  // namespace shapelaw
