#pragma once
// The elementwise half of the fused head loss (model/head_loss.h), torch-free:
// for each row r of a row-major [rows, vocab] block of logits,
//   log_normalizer[r] = log sum_j exp(logits[r, j])
//   logits[r, :]      = scale * softmax(logits[r, :])          (in place)
// Three passes per row (max; exp and sum; scale) while the row sits in L1, so the
// logits stream through memory once. AVX-512 or AVX2+FMA when the CPU has them (chosen
// at run time), a portable SSE2 loop otherwise; exp is a Cephes-style polynomial with
// relative error below 2e-7 (0 below e^-87, where float softmax is 0 anyway).
#include <cstdint>
#include <vector>

namespace shapelaw {

void softmax_rows_in_place(float* logits, int64_t rows, int64_t vocab, float scale, float* log_normalizer);

struct SoftmaxRowsKernel {
  const char* name;  // "avx512", "avx2" or "portable"
  void (*run)(float* logits, int64_t rows, int64_t vocab, float scale, float* log_normalizer);
};
// The kernels this CPU can run, best first; softmax_rows_in_place uses the first.
const std::vector<SoftmaxRowsKernel>& softmax_rows_kernels();

}  // namespace shapelaw
