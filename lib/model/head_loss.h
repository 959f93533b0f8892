#pragma once
// The output head and the loss in one: mean_i [ logsumexp(h_i U^T) - (h_i U^T)[y_i] ].
//
// Unfused, LibTorch materializes logits, log_softmax and their gradients as separate
// [N, V] tensors and streams each through memory (exp twice, about seven passes); at
// small widths that is most of a CPU step outside the matmuls. Fused, the forward pass
// turns the logits in place, row by row while each row sits in L1 (kernels/softmax_rows.h),
// into the gradient
//   dL/dlogits_i = (softmax(logits_i) - onehot(y_i)) / N
// so backward is just the two head matmuls: dL/dh = G U, dL/dU = G^T h.
#include <torch/torch.h>

namespace shapelaw {

// h [N, W], head weight [V, W], targets [N] (int64) -> scalar mean loss (fp32).
// Fused on CPU in fp32 when a gradient is wanted, chunked off the CPU (below, with a
// gradient or without); the plain composition otherwise (CPU autocast, CPU evaluation). All give the same loss and
// gradients up to rounding.
// small_width: where the width is one kernels/softmax_rows.h's head_rows keeps in registers
// (16 or 32, whatever the instruction set), the whole head in one pass over the rows
// instead of three GEMMs; equal up to float rounding (dU is summed in another order), so
// only with --block-impl fused.
// vocab: the real vocabulary when the weight has padding rows past it (0: all rows are
// real). The loss is over the real columns only and the padding rows get zero gradient.
// On the CPU the padding is cut from the weight before the matmul (a view: the same
// numbers as an unpadded model's, nothing to gain from whole tiles there); elsewhere the
// matmul runs over every row, for its tiles, and the logits are cut.
torch::Tensor head_cross_entropy(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets,
                                 bool small_width = false, int64_t vocab = 0);

// Off the CPU, with a gradient wanted: the loss over chunks of chunk_rows rows (0:
// head_chunk_rows, model/model_config.h), each chunk's gradients taken at once, so no [N, V] tensor outlives its
// chunk (dh [N, W] and dU are kept instead). Any device; tested on the CPU against the
// plain composition.
torch::Tensor head_cross_entropy_chunked(const torch::Tensor& h, const torch::Tensor& weight,
                                         const torch::Tensor& targets, int64_t vocab = 0, int64_t chunk_rows = 0);

// Off the CPU, without a gradient (evaluation): the loss chunk by chunk, each chunk's
// logits, their fp32 copy and log-probabilities freed before the next, so evaluating
// holds rows x V of them instead of N x V (at micro-batch 16 and GPT-2's vocabulary,
// 8 GB of a GPU). The rows' losses are the plain composition's; their sum is taken per
// chunk. Any device; tested on the CPU against the plain composition.
torch::Tensor head_cross_entropy_eval_chunked(const torch::Tensor& h, const torch::Tensor& weight,
                                              const torch::Tensor& targets, int64_t vocab = 0,
                                              int64_t chunk_rows = 0);

// The plain composition, always: the reference the fused path is tested against.
torch::Tensor head_cross_entropy_unfused(const torch::Tensor& h, const torch::Tensor& weight,
                                         const torch::Tensor& targets, int64_t vocab = 0);

}  // namespace shapelaw
