// The one dispatch of the kernel layer: every body compiled once per instruction set
// (isa_namespaces.inc), one table per set, and the table of the process's choice
// (kernel_set.h) behind each public function.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/adamw.h"
#include "kernels/block_kernels.h"
#include "kernels/kernel_set.h"
#include "kernels/softmax_rows.h"
#include "util/error.h"

namespace shapelaw {

#define SHAPELAW_ISA_AVX512
#define SHAPELAW_ISA_BODY "kernels/isa_body.inc"
#include "kernels/isa_namespaces.inc"
#undef SHAPELAW_ISA_BODY
#undef SHAPELAW_ISA_AVX512

namespace {

struct Table {
  decltype(&portable::attention_forward) attention_forward;
  decltype(&portable::attention_backward) attention_backward;
  decltype(&portable::norm_forward) norm_forward;
  decltype(&portable::norm_backward) norm_backward;
  decltype(&portable::gelu_forward) gelu_forward;
  decltype(&portable::gemm) gemm;
  decltype(&portable::softmax_rows) softmax_rows;
  decltype(&portable::head_rows) head_rows;
  decltype(&portable::adamw_range) adamw_range;
};

#define SHAPELAW_TABLE(ns)                                                                                        \
  Table {                                                                                                         \
    ns::attention_forward, ns::attention_backward, ns::norm_forward, ns::norm_backward, ns::gelu_forward, ns::gemm, \
        ns::softmax_rows, ns::head_rows, ns::adamw_range                                                          \
  }

const Table& table() {
  static const Table portable_table = SHAPELAW_TABLE(portable);
#if defined(__x86_64__) && defined(__GNUC__)
  static const Table avx2_table = SHAPELAW_TABLE(avx2), avx512_table = SHAPELAW_TABLE(avx512);
  switch (kernel_isa()) {
    case Isa::avx512: return avx512_table;
    case Isa::avx2: return avx2_table;
    case Isa::portable: break;
  }
#endif
  return portable_table;
}
#undef SHAPELAW_TABLE

}  // namespace

void attention_forward(const AttentionShape& s, int64_t sequences, const float* qkv, const float* cos,
                       const float* sin, float* y, float* lse) {
  table().attention_forward(s, sequences, qkv, cos, sin, y, lse);
}

void attention_backward(const AttentionShape& s, int64_t sequences, const float* qkv, const float* cos,
                        const float* sin, const float* y, const float* lse, const float* dy, float dy_scale,
                        float* dqkv) {
  table().attention_backward(s, sequences, qkv, cos, sin, y, lse, dy, dy_scale, dqkv);
}

void norm_forward(const NormShape& n, const float* x, const float* gain, const float* shift, float* y, float* mean,
                  float* rstd) {
  table().norm_forward(n, x, gain, shift, y, mean, rstd);
}

void norm_backward(const NormShape& n, const float* x, const float* gain, const float* mean, const float* rstd,
                   const float* dy, const float* base, float* dx, float* dgain, float* dshift) {
  table().norm_backward(n, x, gain, mean, rstd, dy, base, dx, dgain, dshift);
}

void gelu_forward(int64_t n, const float* x, float* y, float* dydx) { table().gelu_forward(n, x, y, dydx); }

void gemm(const Gemm& g) { table().gemm(g); }

void softmax_rows_in_place(float* logits, int64_t rows, int64_t vocab, float scale, float* log_normalizer) {
  table().softmax_rows(logits, rows, vocab, scale, log_normalizer);
}

void head_rows(const HeadRows& a) {
  if (!head_rows_supported(a.width))
    throw Error("head_rows: width " + std::to_string(a.width) + " is not one the small-width head keeps in registers");
  std::vector<float> scratch(size_t(4 * a.vocab));
  table().head_rows(a, scratch.data());
}

void adamw_range(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWCoefficients& c) {
  table().adamw_range(param, grad, m, v, n, c);
}

}  // namespace shapelaw
