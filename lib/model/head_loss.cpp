#include "model/head_loss.h"

#include <ATen/autocast_mode.h>

namespace shapelaw {
namespace {

// Rows per block: a block of logits stays in a core's L2 cache (~1 MiB) across the
// softmax passes.
int64_t rows_per_block(int64_t vocab) { return std::max<int64_t>(8, (1 << 18) / std::max<int64_t>(1, vocab)); }

struct FusedHeadCrossEntropy : torch::autograd::Function<FusedHeadCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& weight, const torch::Tensor& targets) {
    const int64_t n = h.size(0), vocab = weight.size(0);
    torch::Tensor grad = torch::mm(h, weight.t());  // logits, turned into dL/dlogits below
    torch::Tensor target_logit = grad.gather(1, targets.unsqueeze(1)).squeeze(1);
    torch::Tensor log_normalizer = torch::empty({n}, grad.options());
    const int64_t block = rows_per_block(vocab);
    for (int64_t r = 0; r < n; r += block) {
      torch::Tensor g = grad.narrow(0, r, std::min(block, n - r));
      torch::Tensor row_max = g.amax(1, /*keepdim=*/true);
      g.sub_(row_max).exp_();
      torch::Tensor row_sum = g.sum(1, /*keepdim=*/true);
      g.div_(row_sum * double(n));  // softmax / N
      log_normalizer.narrow(0, r, g.size(0)).copy_((row_sum.log_() + row_max).squeeze(1));
    }
    grad.scatter_add_(1, targets.unsqueeze(1), torch::full({n, 1}, -1.0 / double(n), grad.options()));
    ctx->save_for_backward({h, weight});
    ctx->saved_data["grad_logits"] = grad;
    return (log_normalizer - target_logit).mean();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &h = saved[0], &weight = saved[1];
    const torch::Tensor grad = ctx->saved_data["grad_logits"].toTensor();
    const torch::Tensor scale = grad_output[0];
    return {torch::mm(grad, weight) * scale, torch::mm(grad.t(), h) * scale, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor head_cross_entropy_unfused(const torch::Tensor& h, const torch::Tensor& weight,
                                         const torch::Tensor& targets) {
  return torch::nn::functional::cross_entropy(torch::matmul(h, weight.t()).to(torch::kFloat32), targets);
}

torch::Tensor head_cross_entropy(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets) {
  const bool fusable = h.device().is_cpu() && h.scalar_type() == torch::kFloat32 &&
                       weight.scalar_type() == torch::kFloat32 && !at::autocast::is_cpu_enabled() &&
                       torch::GradMode::is_enabled() && (h.requires_grad() || weight.requires_grad());
  if (!fusable) return head_cross_entropy_unfused(h, weight, targets);
  return FusedHeadCrossEntropy::apply(h.contiguous(), weight, targets.contiguous());
}

}  // namespace shapelaw
