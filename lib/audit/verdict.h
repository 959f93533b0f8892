#pragma once
// Verdicts on D/D_crit and the counterfactual redesign at equal non-embedding
// parameters.
//
// Verdict thresholds (ratio r = D / D_crit; `near` and `far` are options):
//   r ≤ 1            "within D_crit"
//   1 < r ≤ near     "near D_crit"       (near = 1.25 by default)
//   near < r ≤ far   "over-deep"         (far = 2 by default)
//   r > far          "far over-deep"
// The verdict uses the point estimate; when the ratio's 95% interval straddles a
// threshold the verdict says so.
//
// Redesign: D' = D_crit rounded to the nearest integer (at least 1), W' from
// N = 12·D'·W'² rounded to a multiple of 128 (at least 128), where N is 12·D·W² of the
// original ("paper", default) or its counted non-embedding parameters ("counted";
// active parameters for MoE). Only offered when D > D'.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "audit/dcrit_law.h"

namespace shapelaw::audit {

struct VerdictOptions {
  double near = 1.25, far = 2.0;
};

std::string verdict(double ratio, const VerdictOptions& options);
// Thresholds (1, near, far) strictly inside [lo, hi].
std::vector<double> thresholds_crossed(const Interval& ratio_ci, const VerdictOptions& options);

struct Redesign {
  int64_t depth = 0, width = 0;
  double n_original = 0, n_redesign = 0;  // the N compared (12·D·W² convention)
};

// nullopt when depth ≤ round(dcrit).
std::optional<Redesign> redesign(int64_t depth, double dcrit, double n_original, int64_t multiple = 128);

}  // namespace shapelaw::audit
