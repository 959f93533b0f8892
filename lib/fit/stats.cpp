#include "fit/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shapelaw::fit {

Metrics compute_metrics(const std::vector<double>& obs, const std::vector<double>& pred, double rss,
                        double objective, int k) {
  Metrics m;
  m.n = (int)obs.size();
  m.k = k;
  m.rss = rss;
  m.objective = objective;
  double mean = 0;
  for (double v : obs) mean += v;
  mean /= std::max(1, m.n);
  double ss_tot = 0, ss_res = 0;
  for (int i = 0; i < m.n; ++i) {
    ss_tot += (obs[i] - mean) * (obs[i] - mean);
    ss_res += (obs[i] - pred[i]) * (obs[i] - pred[i]);
  }
  m.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : std::numeric_limits<double>::quiet_NaN();
  m.rmse = std::sqrt(ss_res / std::max(1, m.n));
  double n = m.n;
  double ll_term = n * std::log(std::max(rss, 1e-300) / n);
  m.aic = ll_term + 2.0 * k;
  m.aicc = (n - k - 1 > 0) ? m.aic + 2.0 * k * (k + 1) / (n - k - 1) : std::numeric_limits<double>::infinity();
  m.bic = ll_term + k * std::log(n);
  return m;
}

double percentile(std::vector<double> v, double q) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }), v.end());
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = (size_t)std::floor(pos), hi = std::min(v.size() - 1, lo + 1);
  double frac = pos - lo;
  return v[lo] * (1 - frac) + v[hi] * frac;
}

namespace {
// Regularized lower gamma P(a,x) by series, upper Q by continued fraction (Lentz).
double gamma_p_series(double a, double x) {
  double sum = 1.0 / a, term = sum;
  for (int n = 1; n < 10000; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * 1e-16) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}
double gamma_q_cf(double a, double x) {
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 10000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::abs(del - 1) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}
}  // namespace

double chi2_sf(double x, double df) {
  if (!(x > 0)) return 1.0;
  double a = df / 2, z = x / 2;
  if (z < a + 1) return 1 - gamma_p_series(a, z);
  return gamma_q_cf(a, z);
}

namespace {
// Continued fraction of the incomplete beta function (modified Lentz), converging fast
// for x < (a + 1) / (a + b + 2); beta_inc uses the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) otherwise.
double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  auto guard = [&](double v) { return std::abs(v) < tiny ? tiny : v; };
  double c = 1, d = 1 / guard(1 - (a + b) * x / (a + 1)), h = d;
  for (int m = 1; m < 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));  // even step
    d = 1 / guard(1 + aa * d);
    c = guard(1 + aa / c);
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));  // odd step
    d = 1 / guard(1 + aa * d);
    c = guard(1 + aa / c);
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) break;
  }
  return h;
}
}  // namespace

double beta_inc(double a, double b, double x) {
  if (!(x > 0)) return 0;
  if (!(x < 1)) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double f_sf(double f, double d1, double d2) {
  if (!(f > 0)) return 1;
  if (!std::isfinite(f)) return 0;
  return beta_inc(d2 / 2, d1 / 2, d2 / (d2 + d1 * f));
}

double t975(double v) {
  const double z = 1.959963984540054;
  if (!(v > 0) || !std::isfinite(v)) return z;
  double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z, z9 = z7 * z * z;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}

double ols_slope(const std::vector<double>& x, const std::vector<double>& y) {
  size_t n = x.size();
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) { mx += x[i]; my += y[i]; }
  mx /= n;
  my /= n;
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return sxx > 0 ? sxy / sxx : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace shapelaw::fit
