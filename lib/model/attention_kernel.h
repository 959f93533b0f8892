#pragma once
// Causal softmax attention with rotary embeddings for one (sequence, head) at a time, in
// plain loops: the fused block's attention (model/fused_block.h). At head dim 16 and
// seq 64 a batched GEMM spends more on packing and dispatch than on arithmetic, and the
// ATen form takes a dozen ops (RoPE, cat, baddbmm, softmax, bmm, transposes) each way.
// Torch-free; AVX2+FMA when the CPU has it (chosen at run time), a portable loop otherwise.
//
// Layout, for each of `sequences` consecutive sequences: qkv rows [T, 3W] (q | k | v, each H heads of d), before RoPE;
// cos/sin the full-width rotate-half tables [T, d] (model.cpp's rope_full_tables); y rows
// [T, W], lse [H, T]. The forward pass keeps only lse (log-sum-exp of each score row, [T] per head):
// backward recomputes the probabilities from q, k and lse instead of storing [T, T].
#include <cstdint>

namespace shapelaw {

struct AttentionShape {
  int64_t T, H, d;  // sequence length, heads, head dim (W = H d)
  float scale;      // of the logits q k^T
};

// y[t, h d : (h+1) d] = softmax_s<=t(scale RoPE(q_t) . RoPE(k_s)) v_s.
void attention_forward(const AttentionShape& s, int64_t sequences, const float* qkv, const float* cos,
                       const float* sin, float* y, float* lse);

// From dy (times dy_scale) and the forward pass's y and lse: dqkv rows [T, 3W] (written,
// not accumulated), the gradient with respect to qkv before RoPE.
void attention_backward(const AttentionShape& s, int64_t sequences, const float* qkv, const float* cos,
                        const float* sin, const float* y, const float* lse, const float* dy, float dy_scale,
                        float* dqkv);

// "avx2" or "portable": the kernel the two functions above run.
const char* attention_kernel_name();

}  // namespace shapelaw
