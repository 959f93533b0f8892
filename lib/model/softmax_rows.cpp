#include "model/softmax_rows.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace shapelaw {

#define SHAPELAW_ISA_AVX512
#define SHAPELAW_ISA_BODY "model/softmax_rows_kernel.inc"
#include "model/isa_namespaces.inc"
#undef SHAPELAW_ISA_BODY
#undef SHAPELAW_ISA_AVX512

std::vector<SoftmaxRowsKernel> available_kernels() {
  std::vector<SoftmaxRowsKernel> kernels;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) kernels.push_back({"avx512", avx512::softmax_rows, avx512::head_rows});
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) kernels.push_back({"avx2", avx2::softmax_rows, avx2::head_rows});
#endif
  kernels.push_back({"portable", portable::softmax_rows, portable::head_rows});
  return kernels;
}

const std::vector<SoftmaxRowsKernel>& softmax_rows_kernels() {
  static const std::vector<SoftmaxRowsKernel> kernels = available_kernels();
  return kernels;
}

bool head_rows(const HeadRows& a) {
  std::vector<float> scratch(size_t(4 * a.vocab));
  return softmax_rows_kernels().front().head(a, scratch.data());
}

bool head_rows_supported(int64_t width) {
  HeadRows none{};
  none.width = width;
  return softmax_rows_kernels().front().head(none, nullptr);
}

void softmax_rows_in_place(float* logits, int64_t rows, int64_t vocab, float scale, float* log_normalizer) {
  softmax_rows_kernels().front().run(logits, rows, vocab, scale, log_normalizer);
}

}  // namespace shapelaw
