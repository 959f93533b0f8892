#pragma once
// The elementwise half of the fused head loss (model/head_loss.h), torch-free:
// for each row r of a row-major [rows, vocab] block of logits,
//   log_normalizer[r] = log sum_j exp(logits[r, j])
//   logits[r, :]      = scale * softmax(logits[r, :])          (in place)
// Three passes per row (max; exp and sum; scale) while the row sits in L1, so the
// logits stream through memory once. The body is the process's one choice
// (kernels/kernel_set.h: AVX2+FMA by default, AVX-512 with --kernels native, a portable
// SSE2 loop); exp is a Cephes-style polynomial with relative error below 2e-7 (0 below
// e^-87, where float softmax is 0 anyway).
#include <cstdint>

namespace shapelaw {

void softmax_rows_in_place(float* logits, int64_t rows, int64_t vocab, float scale, float* log_normalizer);

// The whole fused head for small widths, logits never leaving L1: for each row i of h,
//   loss[i] = logsumexp(h_i U^T) - (h_i U^T)[y_i],  g_i = scale (softmax(h_i U^T) - onehot(y_i))
//   dh[i] = g_i U (written),  dweight += g_i^T h_i (accumulated)
// At W = 16 the three head GEMMs (K = 16, N = 16) run far below the BLAS's peak and the
// [N, V] gradient is written to memory and read back twice; here it stays in a 4-row
// scratch. The rows' order fixes dweight's rounding. Only where head_rows_supported: the
// widths are the same for every body (16 is 2 vectors of AVX2, 1 of AVX-512, 4 of SSE);
// at 64 the accumulators of AVX2 no longer fit in its registers.
struct HeadRows {
  const float *h, *weight, *weightT;  // [rows, W], U [V, W], U^T [W, V]
  const int64_t* targets;
  int64_t rows, width, vocab;
  float scale;
  float *loss, *dh, *dweight;  // [rows], [rows, W], [V, W]
};
constexpr bool head_rows_supported(int64_t width) { return width == 16 || width == 32; }
void head_rows(const HeadRows& a);  // throws Error where !head_rows_supported(a.width)

}  // namespace shapelaw
