#pragma once
// What a fit-law record (fit.json, docs/formats.md "Fit record") says about the paper's law,
// read once, with every reason not to lean on it: the likelihood-ratio test of Φ
// (paper-log vs no-phi), whether fit-law flagged that test or the fits behind it, where the
// fitted critical depth lies against the grid, and whether the capacity term collapsed.
#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/capacity.h"

namespace shapelaw::study {

struct LawEvidence {
  bool tested = false;          // the LR test exists in the record
  double statistic = 0, p_value = 1;
  int df = 0;
  bool phi_selected = false;    // the selected law has Φ
  std::string selected;         // the selected law, "" when none
  std::vector<std::string> flags;  // fit-law's own reasons not to use the test (non-convergence, ...)
  std::string criterion;        // fit-law's selection criterion ("aicc", ...)
  double phi_delta = NAN;       // paper-log's distance from the selected law in that criterion
  // The fitted D_crit(W) = κ·ln W at the grid's widths lies at or below the shallowest depth
  // everywhere: Φ is active from the first layer and the "critical depth" is not inside the grid.
  // Compared with a relative tolerance (kink_tolerance): a fit that puts D_crit exactly on the
  // shallowest run (κ = 1/ln W_max, where the kink of max(0, D − D_crit) meets the grid) must not
  // flip the verdict on the last bit of κ.
  bool dcrit_below_grid = false;
  // The point estimate places D_crit above the shallowest run somewhere, but the lower end of κ's
  // 95% bootstrap CI does not at any width: the grid does not resolve a critical depth.
  bool dcrit_unresolved = false;
  bool kappa_at_bound = false;
  double kappa = 0;
  double kappa_lo = NAN, kappa_hi = NAN;  // κ's 95% bootstrap CI (NaN without a bootstrap)
  bool capacity_degenerate = false;  // s ≤ 0 or α ≤ 0.01 in paper-log (capacity_is_degenerate)
  double s = 0, A = 0, alpha = 0;      // A = s/α (derived when the record is in Box-Cox coordinates)
  bool usable() const { return tested && flags.empty(); }
};
// The one rule both reports use (fit/capacity.h): a capacity term with slope s = A·α ≤ 0 (loss
// not falling with N) or α ≤ 0.01 (flat in N over any grid) leaves Φ to carry every difference.
using fit::capacity_is_degenerate;

constexpr double kink_tolerance = 1e-6;

// widths, min_depth: the study's grid. Throws Error naming the file on a record that is not one.
LawEvidence law_evidence(const nlohmann::json& fit, const std::string& path, const std::vector<int>& widths,
                         int min_depth);

}  // namespace shapelaw::study
