#pragma once
// Gradient norms as the optimizer measures them, for the plain and the ZeRO optimizer
// alike: the same kernels in the same order, so that ZeRO on one rank clips by the very
// same factor as plain AdamW (bf16 turns one differing last bit into a different run).
#include <vector>

#include <torch/torch.h>

namespace shapelaw {

// Each tensor's squared fp32 norm, stacked into a 1-D fp32 tensor on their device (a
// non-empty list). `foreach` takes the per-tensor norms in one multi-tensor kernel (a
// GPU: one launch instead of one per tensor); the optimizer uses it off the CPU only, so
// a CPU run keeps its bits. The per-layer probe norms (model.cpp, ZeRO's slices) use it too.
torch::Tensor squared_norms(const std::vector<torch::Tensor>& tensors, bool foreach);

// The global norm of the parameters' gradients (those defined), as a 0-dim fp64 tensor on
// their device: sqrt of the sum of squared_norms.
torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params, bool foreach);

}  // namespace shapelaw
