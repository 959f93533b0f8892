#pragma once
// torch::optim::AdamW's update in one pass per parameter on CPU. LibTorch 1.13's AdamW
// is seven tensor ops per parameter (decay, two moment updates, sqrt, scale, add,
// addcdiv), each a pass over memory, after a separate pass to clip the gradients:
//   p  <- p (1 - lr wd)
//   m  <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,      g = clip_scale * grad
//   p  <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// Same formula, same state objects (step, exp_avg, exp_avg_sq) inside the optimizer, so
// checkpoints (optimizer.pt) and resume are unchanged.
#include <torch/torch.h>

namespace shapelaw {

// Multiplies every gradient by clip_scale and takes one AdamW step. Fused for CPU fp32
// contiguous parameters without amsgrad; otherwise scales the gradients and calls
// optimizer.step().
void adamw_step(torch::optim::AdamW& optimizer, double clip_scale);

}  // namespace shapelaw
