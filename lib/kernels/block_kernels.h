#pragma once
// The fused block's loops (model/fused_block.h): causal softmax attention with rotary
// embeddings for one (sequence, head) at a time, the pre-norms row by row, GELU, and the
// small GEMMs of the projections. At head dim 16 and
// seq 64 a batched GEMM spends more on packing and dispatch than on arithmetic, and the
// ATen form takes a dozen ops (RoPE, cat, baddbmm, softmax, bmm, transposes) each way.
// Torch-free; the body is the process's one choice (kernels/kernel_set.h): AVX2+FMA by
// default, AVX-512 with --kernels native where the CPU has it, a portable loop otherwise.
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

// Layernorm (centered, shift optional) or rmsnorm (not centered, no shift) of rows [rows, W]:
//   y = (x - mean) rstd gain (+ shift),  rstd = 1 / sqrt(mean((x - mean)^2) + eps)
struct NormShape {
  int64_t rows, width;
  bool centered;
  float eps;
};
// mean [rows] may be null (rmsnorm); rstd [rows] is written.
void norm_forward(const NormShape& n, const float* x, const float* gain, const float* shift, float* y, float* mean,
                  float* rstd);
// dx = base + d norm / dx (base may be null), dgain, dshift (may be null) summed over rows.
void norm_backward(const NormShape& n, const float* x, const float* gain, const float* mean, const float* rstd,
                   const float* dy, const float* base, float* dx, float* dgain, float* dshift);

// The exact (erf) GELU over n floats: y = x Phi(x) and dydx = GELU'(x) = Phi(x) + x phi(x).
void gelu_forward(int64_t n, const float* x, float* y, float* dydx);

// C[m, n] = base[m, n] + alpha (sum_k A[m a_row + k a_col] B[k b_row + n] + bias[n]) for
// m < M, n < N (base and bias may be null; base has C's row stride). Only where gemm_fits.
struct Gemm {
  int64_t M, N, K;
  const float* A;
  int64_t a_row, a_col;
  const float* B;
  int64_t b_row;
  float* C;
  int64_t c_row;
  float alpha;
  const float *base, *bias;
};
// The tile is 4 rows by 16 columns in every body (2 vectors of AVX2, 1 of AVX-512, 4 of
// SSE), so which products take this GEMM does not depend on the instruction set.
constexpr int64_t kGemmRows = 4, kGemmColumns = 16;
constexpr bool gemm_fits(int64_t M, int64_t N) { return M % kGemmRows == 0 && N % kGemmColumns == 0; }
void gemm(const Gemm& g);

}  // namespace shapelaw
