#pragma once
// Profile-likelihood 95% intervals for nonlinear parameters: the parameter is held at
// a value, every other parameter is refitted, and the interval is where the Gaussian
// likelihood-ratio statistic n·ln(RSS(v)/RSŜ) stays below χ²₁(0.95) = 3.841. Unlike the
// Jacobian interval it is valid at a kink (D_crit on a run's depth) and follows a curved,
// asymmetric likelihood; for a Huber objective it is an approximation.
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fit/fitter.h"

namespace shapelaw::fit {

struct ProfileInterval {
  bool computed = false;
  double lo = 0, hi = 0;
  bool lo_at_bound = false, hi_at_bound = false;  // the statistic never crossed: open at the box
  int refits = 0;
};

// For parameter index q (a nonlinear parameter of m, not fixed) around the optimum fr.
ProfileInterval profile_interval(const Model& m, const std::vector<Point>& pts, const FitResult& fr, int q,
                                 const FitOptions& o);

}  // namespace shapelaw::fit
