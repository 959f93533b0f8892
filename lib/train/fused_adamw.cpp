#include "train/fused_adamw.h"

#include <cmath>

#include <ATen/Parallel.h>

#include "compat/torch_compat.h"

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

struct Coefficients {
  float decay, b1, b2, g_scale, one_minus_b1, one_minus_b2, sqrt_correction2, eps, step_size;
};

// One pass over n elements; cloned for AVX-512 and AVX2 (picked at load time), so the
// loop runs at the CPU's vector width while the binary stays portable.
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void update_range(float* __restrict param, const float* __restrict grad, float* __restrict m,
                  float* __restrict v, int64_t n, Coefficients c) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * c.g_scale;
    const float mi = c.b1 * m[i] + c.one_minus_b1 * g;
    const float vi = c.b2 * v[i] + c.one_minus_b2 * g * g;
    m[i] = mi;
    v[i] = vi;
    // torch's order: p *= decay; denom = sqrt(v) / sqrt(bc2) + eps; p += -step_size * (m / denom)
    const float decayed = param[i] * c.decay;
    param[i] = decayed + -c.step_size * (mi / (std::sqrt(vi) / c.sqrt_correction2 + c.eps));
  }
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
    const double lr = o.lr(), beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      auto& state = state_of(optimizer, p);
      state.step(state.step() + 1);
      const double correction1 = 1.0 - std::pow(beta1, double(state.step()));
      const double correction2 = 1.0 - std::pow(beta2, double(state.step()));
      const float decay = float(1.0 - lr * o.weight_decay()), b1 = float(beta1), b2 = float(beta2);
      const float g_scale = float(clip_scale), one_minus_b1 = float(1.0 - beta1), one_minus_b2 = float(1.0 - beta2);
      const float sqrt_correction2 = float(std::sqrt(correction2)), eps = float(o.eps());
      const float step_size = float(lr / correction1);
      float* param = p.data_ptr<float>();
      const float* grad = p.grad().data_ptr<float>();
      float* m = state.exp_avg().data_ptr<float>();
      float* v = state.exp_avg_sq().data_ptr<float>();
      // written through raw pointers: tell autograd these tensors changed, as in-place ops would
      torch::autograd::impl::bump_version(p);
      torch::autograd::impl::bump_version(state.exp_avg());
      torch::autograd::impl::bump_version(state.exp_avg_sq());
      at::parallel_for(0, p.numel(), /*grain_size=*/1 << 15, [&](int64_t begin, int64_t end) {
        update_range(param + begin, grad + begin, m + begin, v + begin, end - begin,
                     {decay, b1, b2, g_scale, one_minus_b1, one_minus_b2, sqrt_correction2, eps, step_size});
      });
    }
  }
}

}  // namespace shapelaw
