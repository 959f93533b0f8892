#pragma once
// The rules on a fitted capacity term A/N^alpha, in one place for fit-law, audit and the study
// report. Header-only: audit reads fit records without linking the fitter.
#include <cmath>

namespace shapelaw::fit {

// |alpha| at or below this: N^-alpha is flat over any grid, and A = s/alpha (with the constant
// beside it) is no estimate of anything, only the slope s is.
inline constexpr double kFlatAlpha = 0.01;

// s = A*alpha = -d(A*N^-alpha)/d(ln N) at N = 1: the term's slope in ln N, finite where A is not.
inline double capacity_slope(double A, double alpha) { return A * alpha; }
// A from the Box-Cox coordinates; ±infinity (or NaN) at alpha = 0, where the term is -s*ln N.
inline double capacity_A(double s, double alpha) { return s / alpha; }

// Loss does not fall with N (s <= 0): the term cannot carry the N-dependence of the runs.
inline bool capacity_not_falling(double s) { return !(s > 0); }

// A collapsed capacity term (loss not falling with N, or alpha <= kFlatAlpha: flat in N over any
// grid) leaves Φ to carry every difference between runs.
inline bool capacity_is_degenerate(double s, double alpha) {
  return capacity_not_falling(s) || !(alpha > kFlatAlpha);
}

}  // namespace shapelaw::fit
