#include "model/block_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace shapelaw {

#define SHAPELAW_ISA_BODY "model/block_kernels.inc"
#include "model/isa_namespaces.inc"
#undef SHAPELAW_ISA_BODY

namespace {

struct Kernel {
  const char* name;
  decltype(&portable::attention_forward) forward;
  decltype(&portable::attention_backward) backward;
  decltype(&portable::norm_forward) norm_forward;
  decltype(&portable::norm_backward) norm_backward;
  decltype(&portable::gelu_forward) gelu_forward;
  decltype(&portable::gemm) gemm;
};

// The kernels this CPU runs, best first.
std::vector<Kernel> available() {
  std::vector<Kernel> kernels;
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    kernels.push_back({"avx2", avx2::attention_forward, avx2::attention_backward, avx2::norm_forward,
                       avx2::norm_backward, avx2::gelu_forward, avx2::gemm});
#endif
  kernels.push_back({"portable", portable::attention_forward, portable::attention_backward, portable::norm_forward,
                     portable::norm_backward, portable::gelu_forward, portable::gemm});
  return kernels;
}

Kernel& kernel() {
  static Kernel k = available().front();
  return k;
}

}  // namespace

void attention_forward(const AttentionShape& s, int64_t sequences, const float* qkv, const float* cos,
                       const float* sin, float* y, float* lse) {
  kernel().forward(s, sequences, qkv, cos, sin, y, lse);
}

void attention_backward(const AttentionShape& s, int64_t sequences, const float* qkv, const float* cos,
                        const float* sin, const float* y, const float* lse, const float* dy, float dy_scale,
                        float* dqkv) {
  kernel().backward(s, sequences, qkv, cos, sin, y, lse, dy, dy_scale, dqkv);
}

void norm_forward(const NormShape& n, const float* x, const float* gain, const float* shift, float* y, float* mean,
                  float* rstd) {
  kernel().norm_forward(n, x, gain, shift, y, mean, rstd);
}

void norm_backward(const NormShape& n, const float* x, const float* gain, const float* mean, const float* rstd,
                   const float* dy, const float* base, float* dx, float* dgain, float* dshift) {
  kernel().norm_backward(n, x, gain, mean, rstd, dy, base, dx, dgain, dshift);
}

void gelu_forward(int64_t n, const float* x, float* y, float* dydx) { kernel().gelu_forward(n, x, y, dydx); }

bool gemm_fits(int64_t M, int64_t N) { return M % 4 == 0 && N % 16 == 0; }

void gemm(const Gemm& g) { kernel().gemm(g); }

const char* block_kernels_name() { return kernel().name; }

std::vector<std::string> block_kernel_names() {
  std::vector<std::string> names;
  for (const Kernel& k : available()) names.push_back(k.name);
  return names;
}

void use_block_kernels(const std::string& name) {
  for (const Kernel& k : available())
    if (name == k.name) kernel() = k;
}

}  // namespace shapelaw
