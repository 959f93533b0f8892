#pragma once
// torch::optim::AdamW's update in one pass per parameter on CPU. LibTorch 1.13's AdamW
// is seven tensor ops per parameter (decay, two moment updates, sqrt, scale, add,
// addcdiv), each a pass over memory, after a separate pass to clip the gradients:
//   p  <- p (1 - lr wd)
//   m  <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,      g = clip_scale * grad
//   p  <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Same formula in torch's order of operations (kernels/adamw.h; equal to its results up to
// float rounding: torch's vectorized kernels use FMA, this loop does not), same state objects (step,
// exp_avg, exp_avg_sq) inside the optimizer, so optimizer.pt and resume are unchanged.
#include <torch/torch.h>

namespace shapelaw {

// Multiplies every gradient by clip_scale and takes one AdamW step. Fused when every
// parameter, gradient and moment is CPU fp32 contiguous and amsgrad is off; otherwise
// scales the gradients and calls optimizer.step().
void adamw_step(torch::optim::AdamW& optimizer, double clip_scale);

// The same step with the clip scale a 0-dim tensor on the parameters' device, so that a GPU
// step never waits for the host to read the gradient norm: on the CPU the scale is read
// (no wait there) and the step above is taken, elsewhere adamw_step_on_device.
void adamw_step(torch::optim::AdamW& optimizer, const torch::Tensor& clip_scale);

// The device step: each group's tensors in one call of adamw_update's tensor form, the state
// kept in the optimizer's objects as above (optimizer.pt unchanged). Taken on a GPU; on the
// CPU by the tests only.
void adamw_step_on_device(torch::optim::AdamW& optimizer, const torch::Tensor& clip_scale);

// One AdamW step of n contiguous fp32 elements (a parameter or a slice of one) at the
// optimizer's 1-based step count, in the same arithmetic as adamw_step: ZeRO's shard
// update (train/zero_optimizer.h) gives the same bits as the unsharded optimizer.
struct AdamWHyper {
  double lr, beta1, beta2, eps, weight_decay;
};
void adamw_update(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWHyper& h, int64_t step,
                  double clip_scale);

// The same update of lists of tensors sharing the hyper-parameters and the step, with
// clip_scale a 0-dim tensor on their device: ATen's fused multi-tensor AdamW where this
// LibTorch has it for the device (compat::has_fused_adamw; 2.4 and later run it on the CPU
// too), otherwise torch::optim::AdamW's operations tensor by tensor. Neither reads a value
// back to the host.
void adamw_update(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                  const std::vector<torch::Tensor>& exp_avgs, const std::vector<torch::Tensor>& exp_avg_sqs,
                  const AdamWHyper& h, int64_t step, const torch::Tensor& clip_scale);

}  // namespace shapelaw
