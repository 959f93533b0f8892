#pragma once
// Compute-optimal allocation derived numerically from a fitted law: for each
// compute C, minimize L(D, W, T = C/(6·N)) with N = 12·D·W² over depth and width
// (a log grid in D, a scan + golden-section search in W at each D), then fit the
// log-log slopes of N*, T*, D*, W* against C. When the law leaves the shape flat
// (e.g. Φ = 0 for every D ≤ D_crit, or no Φ at all), the optimal depths form a
// range; its deepest and shallowest ends are reported separately.
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fit/laws.h"

namespace shapelaw::fit {

struct OptimalOptions {
  double c_min = 1e18, c_max = 1e24;
  int n_c = 13;
  double d_min = 1, d_max = 1000;
  int n_d = 61;
  double w_min = 16, w_max = 1e6;
  // false: the data has no depth and width, so only N* and T* are meaningful (the D*/W*
  // slopes are left NaN and not reported)
  bool shapes = true;
};

struct OptimalPoint {
  double C = 0, L = 0, N = 0, T = 0;
  double D_lo = 0, D_hi = 0;  // range of depths within 1e-10 of the minimum loss
  double W_at_D_lo = 0, W_at_D_hi = 0;
  bool boundary = false;  // the optimum touches the search box
};

struct OptimalCurve {
  bool available = false;
  std::string reason;
  std::vector<OptimalPoint> points;
  bool shape_unique = false;  // D_lo == D_hi at every C
  // slopes of log(X*) against log C (NaN when not determined)
  double slope_N = 0, slope_T = 0, slope_D_hi = 0, slope_W_at_D_hi = 0, slope_D_lo = 0, slope_W_at_D_lo = 0;
  int n_interior = 0;
};

// Whether the law can trade N against T at all (needs a fitted B/T^delta term).
bool optimal_applicable(const Model& m, std::string* reason);
OptimalCurve compute_optimal(const Model& m, const Eigen::VectorXd& p, const OptimalOptions& o);

}  // namespace shapelaw::fit
