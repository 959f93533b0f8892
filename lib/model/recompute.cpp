#include "model/recompute.h"

#include "compat/torch_compat.h"

namespace shapelaw {
namespace {

struct RecomputedBlock : torch::autograd::Function<RecomputedBlock> {
  // Runs with autograd off (Function::apply): nothing inside the block is saved.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, BlockImpl* block, const torch::Tensor& x,
                               const torch::Tensor& cos, const torch::Tensor& sin) {
    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->saved_data["autocast"] = compat::cuda_autocast_enabled();
    ctx->save_for_backward({x, cos, sin});
    return block->forward(x, cos, sin);
  }

  // Reruns the block on a detached copy of its input and backpropagates through it: the
  // parameters' gradients accumulate as in an ordinary backward; the input's is returned.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
    const auto saved = ctx->get_saved_variables();
    torch::Tensor x = saved[0].detach().requires_grad_(saved[0].requires_grad());
    torch::Tensor y;
    {
      torch::AutoGradMode grad(true);
      compat::AutocastBf16 autocast(ctx->saved_data["autocast"].toBool());
      y = block->forward(x, saved[1], saved[2]);
    }
    torch::autograd::backward({y}, {grad_output[0]});
    return {torch::Tensor(), x.requires_grad() ? x.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor recomputed_block(BlockImpl& block, const torch::Tensor& x, const torch::Tensor& cos,
                               const torch::Tensor& sin) {
  return RecomputedBlock::apply(&block, x, cos, sin);
}

}  // namespace shapelaw
