#pragma once
// One transformer block (model/model.h's h + r Attn(Norm h), then + r MLP(Norm h')) as a
// single autograd node with a hand-written backward: `--block-impl fused`. At the
// micro-study's widths (16-64) the ATen form's ~60 small ops per block, each with its own
// dispatch, autograd node and pass over memory, cost more than the arithmetic; here the
// projections stay GEMMs, SwiGLU uses ATen's kernels without autograd, and the norms,
// GELU, RoPE and causal attention are plain loops (kernels/block_kernels.h).
//
// Every model option of a block is covered (layernorm/rmsnorm, gelu/swiglu, bias, the
// residual multiplier, the attention scale) and activation checkpointing composes (the
// recomputation reruns this node). Not bit-identical to the ATen block: the attention's
// sums run in another order, so the two agree to float rounding (tests/model/
// test_fused_block.cpp). The fast path needs CPU float32 tensors without autocast;
// anything else runs the ATen block (fused_block_applies).
#include <torch/torch.h>

#include "model/model.h"

namespace shapelaw {

// Whether x takes the fused path; the first time it does not, says so on stderr (once per
// process: a CUDA run of a fused config should not print it per block and step).
bool fused_block_applies(const torch::Tensor& x);

// block(x, cos, sin) through the fused node; x [B, T, W], cos/sin [T, head_dim].
torch::Tensor fused_block(BlockImpl& block, const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin);

}  // namespace shapelaw
