#pragma once
// AdamW's elementwise update of n contiguous floats (train/fused_adamw.h drives it per
// parameter, split over threads), in torch's order of operations:
//   g = g_scale grad;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   param = param decay + -step_size (m / (sqrt(v) / sqrt_correction2 + eps))
// Elementwise with no sums and not contracted into FMA (adamw_kernel.inc), so
// every body gives the same bits; only the speed differs. Torch-free.
#include <cstdint>

namespace shapelaw {

struct AdamWCoefficients {
  float decay, b1, b2, g_scale, one_minus_b1, one_minus_b2, sqrt_correction2, eps, step_size;
};

void adamw_range(float* param, const float* grad, float* m, float* v, int64_t n, const AdamWCoefficients& c);

}  // namespace shapelaw
