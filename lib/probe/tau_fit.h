#pragma once
// The gradient-persistence fit of paper §3.2 / §4.7, torch-free:
//
//   ||grad_l|| ~ ||grad_last|| * exp(-(distance_l) / tau),   distance_l = (D-1) - l
//
// for layers l = 0..D-1 (0-based; the paper's layer index is l+1 and its "D - l" is our
// distance). We fit  y_l = ln(norm_l) - ln(norm_last) = b - distance_l / tau  by weighted
// least squares (slope s = -1/tau; intercept b free unless through_origin), with
// weights 1 / var(ln norm_l) ~ (norm_l / se_l)^2 from the spread over the probe's batches
// (uniform when no spread is known). The residual variance is estimated from the fit
// (weights are relative), so the CIs are Student-t intervals on n - p degrees of freedom.
//
// Gradient-side critical depth (appendix A.2): the depth at which the first layer's
// ratio would fall to 1/e, exp(-(D_crit - 1)/tau) = 1/e  =>  D_crit = 1 + tau.
//
// Nothing is hidden: a profile that does not decay, is not monotone, or fits poorly
// still gets every number, plus flags that say so.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shapelaw::probe {

struct DecayFitOptions {
  int exclude_first = 0;        // drop layers 0..exclude_first-1 from the fit
  int exclude_last = 0;         // drop the last exclude_last layers from the fit
  bool weighted = true;         // weights from se (uniform when any se is missing/zero)
  bool through_origin = false;  // fix the intercept at 0 (ratio exactly 1 at the last layer)
  double min_r2 = 0.9;          // below: flag "poor_fit"
  double confidence = 0.95;
};

struct DecayFit {
  int depth = 0;
  std::vector<int> layers;        // layers used by the fit
  std::vector<double> distance;   // (D-1) - layer, per used layer
  std::vector<double> log_ratio;  // ln(norm_l / norm_last), per used layer
  std::vector<double> weight;     // normalized to mean 1
  std::vector<double> residual;   // log_ratio - fitted
  bool weighted = false;
  int n = 0, dof = 0;
  double slope = 0, slope_se = 0, intercept = 0, intercept_se = 0;
  double t_quantile = 0;          // two-sided, at `confidence`, dof degrees of freedom
  double slope_lo = 0, slope_hi = 0;
  // tau = -1/slope when slope < 0, else NaN; CI from the slope's CI (hi = +inf when the
  // slope's CI reaches 0: the decay is not significant)
  double tau = 0, tau_lo = 0, tau_hi = 0;
  double dcrit = 0, dcrit_lo = 0, dcrit_hi = 0;  // 1 + tau
  double r2 = 0;                  // weighted, centered; NaN when y is constant
  double rmse = 0;                // unweighted RMS of residuals (log units)
  double first_layer_ratio = 0;   // observed norm_0 / norm_last (all layers, not only used ones)
  std::vector<std::pair<int, int>> non_monotone;  // (l, l+1) with norm_l > norm_{l+1}
  std::vector<bool> non_monotone_significant;     // gap > 2 combined se
  std::vector<std::string> flags;
  double confidence = 0.95;
};

// norms[l], se[l] for l = 0..D-1 (se may be empty or zeros: unweighted). Throws Error
// for D < 2 ("one layer: no decay to fit"), non-positive/non-finite norms, or fewer than
// two layers left after the exclusions.
DecayFit fit_decay(const std::vector<double>& norms, const std::vector<double>& se,
                   const DecayFitOptions& options);

nlohmann::json to_json(const DecayFit& fit);

// Two-sided Student-t quantile: P(|T_dof| <= q) = confidence. dof >= 1.
double student_t_quantile(double confidence, int dof);
// Regularized incomplete beta I_x(a, b) (continued fraction; for the t CDF).
double incomplete_beta(double a, double b, double x);

}  // namespace shapelaw::probe
