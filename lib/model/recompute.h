#pragma once
// Activation recomputation (checkpointing) of one transformer block: the forward pass
// keeps only the block's input; backward reruns the block's forward with gradients on
// and backpropagates through it. Memory per block drops from everything the block saves
// to its input, for one more forward pass. The block has no randomness (no dropout),
// so the recomputed activations equal the first ones and the gradients are bit-identical.
// bf16 autocast, on in the forward pass, is turned on again for the recomputation.
#include <torch/torch.h>

#include "model/model.h"

namespace shapelaw {

// block(x, cos, sin) with recomputation: call only where a gradient is wanted.
torch::Tensor recomputed_block(BlockImpl& block, const torch::Tensor& x, const torch::Tensor& cos,
                               const torch::Tensor& sin);

}  // namespace shapelaw
