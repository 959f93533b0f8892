#pragma once
// Small statistics helpers: information criteria, R², percentiles, χ² tail.
#include <vector>

namespace shapelaw::fit {

struct Metrics {
  int n = 0, k = 0;
  double objective = 0;  // Σρ in the fitting space
  double rss = 0;        // Σr² in the fitting space (weighted)
  double r2 = 0;         // on the response itself (loss or tau), unweighted
  double rmse = 0;       // on the response itself (nats for loss)
  double aic = 0, aicc = 0, bic = 0;  // Gaussian likelihood in the fitting space, k = #parameters
};

// observed, predicted: response space; rss: fitting-space residual sum of squares.
Metrics compute_metrics(const std::vector<double>& observed, const std::vector<double>& predicted,
                        double rss, double objective, int k);

// Linear-interpolated percentile (q in [0,1]) of unsorted values; NaN when empty.
double percentile(std::vector<double> values, double q);
// Upper tail of χ²(df) at x (regularized incomplete gamma Q(df/2, x/2)).
double chi2_sf(double x, double df);
// Regularized incomplete beta I_x(a, b) (continued fraction, Lentz).
double beta_inc(double a, double b, double x);
// Upper tail of the F(d1, d2) distribution at f.
double f_sf(double f, double d1, double d2);
// Two-sided 95% Student-t quantile t_{0.975}(dof) (Cornish–Fisher expansion; exact
// to ~1e-3 for dof ≥ 3; the normal 1.96 for dof → ∞).
double t975(double dof);
// Least-squares slope of y on x.
double ols_slope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace shapelaw::fit
