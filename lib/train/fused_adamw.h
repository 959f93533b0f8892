#pragma once
// torch::optim::AdamW's update in one pass per parameter on CPU. LibTorch 1.13's AdamW
// is seven tensor ops per parameter (decay, two moment updates, sqrt, scale, add,
// addcdiv), each a pass over memory, after a separate pass to clip the gradients:
//   p  <- p (1 - lr wd)
//   m  <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,      g = clip_scale * grad
//   p  <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Same formula in torch's order of operations (equal to its results up to float rounding:
// torch's vectorized kernels use FMA, this loop does not), same state objects (step,
// exp_avg, exp_avg_sq) inside the optimizer, so optimizer.pt and resume are unchanged.
#include <torch/torch.h>

namespace shapelaw {

// Multiplies every gradient by clip_scale and takes one AdamW step. Fused when every
// parameter, gradient and moment is CPU fp32 contiguous and amsgrad is off; otherwise
// scales the gradients and calls optimizer.step().
void adamw_step(torch::optim::AdamW& optimizer, double clip_scale);

}  // namespace shapelaw
