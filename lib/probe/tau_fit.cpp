#include "probe/tau_fit.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace shapelaw::probe {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Continued fraction of the incomplete beta function (modified Lentz).
double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-15;
  double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 - qab * x / qap;
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < eps) break;
  }
  return h;
}

// P(|T| <= t) for Student's t with dof degrees of freedom, t >= 0.
double t_central_probability(double t, int dof) {
  const double v = dof;
  return 1 - incomplete_beta(v / 2, 0.5, v / (v + t * t));
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double ln_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  const double front = std::exp(ln_front);
  if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
  return 1 - front * beta_cf(b, a, 1 - x) / b;
}

double student_t_quantile(double confidence, int dof) {
  if (dof < 1) throw Error("student_t_quantile: dof must be >= 1");
  if (!(confidence > 0 && confidence < 1)) throw Error("confidence must lie in (0, 1)");
  double lo = 0, hi = 1;
  while (t_central_probability(hi, dof) < confidence) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (t_central_probability(mid, dof) < confidence ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

DecayFit fit_decay(const std::vector<double>& norms, const std::vector<double>& se,
                   const DecayFitOptions& o) {
  const int D = int(norms.size());
  if (D < 2) throw Error("one layer: no decay to fit (gradient persistence needs depth >= 2)");
  if (!se.empty() && se.size() != norms.size()) throw Error("fit_decay: norms and se differ in length");
  for (int l = 0; l < D; ++l)
    if (!(std::isfinite(norms[l]) && norms[l] > 0))
      throw Error("layer " + std::to_string(l) + ": gradient norm " + std::to_string(norms[l]) +
                  " is not a positive number (no gradient reached it?)");
  if (o.exclude_first < 0 || o.exclude_last < 0) throw Error("--exclude-first/--exclude-last must be >= 0");
  const int first = o.exclude_first, last = D - 1 - o.exclude_last;
  const int p = o.through_origin ? 1 : 2;
  if (last - first + 1 < 2)
    throw Error("depth " + std::to_string(D) + " leaves " + std::to_string(std::max(0, last - first + 1)) +
                " layer(s) after excluding " + std::to_string(o.exclude_first) + " first and " +
                std::to_string(o.exclude_last) + " last: need at least 2 to fit a decay");

  DecayFit f;
  f.depth = D;
  f.confidence = o.confidence;
  const double ln_last = std::log(norms[D - 1]);
  bool have_se = o.weighted && !se.empty();
  for (int l = first; l <= last && have_se; ++l)
    if (!(std::isfinite(se[l]) && se[l] > 0)) have_se = false;
  f.weighted = have_se;
  for (int l = first; l <= last; ++l) {
    f.layers.push_back(l);
    f.distance.push_back(double(D - 1 - l));
    f.log_ratio.push_back(std::log(norms[l]) - ln_last);
    // var(ln norm) ~ (se/norm)^2 (delta method); floor the relative se at 1e-6
    const double rel = have_se ? std::max(se[l] / norms[l], 1e-6) : 1.0;
    f.weight.push_back(1.0 / (rel * rel));
  }
  f.n = int(f.layers.size());
  f.dof = f.n - p;
  double wmean = 0;
  for (double w : f.weight) wmean += w;
  wmean /= f.n;
  for (double& w : f.weight) w /= wmean;

  // weighted normal equations
  double Sw = 0, Sx = 0, Sy = 0, Sxx = 0, Sxy = 0;
  for (int i = 0; i < f.n; ++i) {
    const double w = f.weight[i], x = f.distance[i], y = f.log_ratio[i];
    Sw += w; Sx += w * x; Sy += w * y; Sxx += w * x * x; Sxy += w * x * y;
  }
  double inv00 = 0, inv11 = 0;  // diagonal of (X'WX)^-1 for (intercept, slope)
  if (o.through_origin) {
    f.intercept = 0;
    f.slope = Sxy / Sxx;
    inv11 = 1 / Sxx;
  } else {
    const double det = Sw * Sxx - Sx * Sx;
    f.slope = (Sw * Sxy - Sx * Sy) / det;
    f.intercept = (Sy - f.slope * Sx) / Sw;
    inv00 = Sxx / det;
    inv11 = Sw / det;
  }
  double ss_res = 0, ss_raw = 0;
  const double ybar = Sy / Sw;
  double ss_tot = 0;
  for (int i = 0; i < f.n; ++i) {
    const double r = f.log_ratio[i] - (f.intercept + f.slope * f.distance[i]);
    f.residual.push_back(r);
    ss_res += f.weight[i] * r * r;
    ss_raw += r * r;
    ss_tot += f.weight[i] * (f.log_ratio[i] - ybar) * (f.log_ratio[i] - ybar);
  }
  f.rmse = std::sqrt(ss_raw / f.n);
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : kNaN;
  if (f.dof >= 1) {
    const double s2 = ss_res / f.dof;
    f.slope_se = std::sqrt(s2 * inv11);
    f.intercept_se = o.through_origin ? 0 : std::sqrt(s2 * inv00);
    f.t_quantile = student_t_quantile(o.confidence, f.dof);
    f.slope_lo = f.slope - f.t_quantile * f.slope_se;
    f.slope_hi = f.slope + f.t_quantile * f.slope_se;
  } else {
    f.slope_se = f.intercept_se = f.t_quantile = kNaN;
    f.slope_lo = f.slope_hi = kNaN;
    f.flags.push_back("no_dof");  // as many parameters as points: no CI
  }

  if (f.slope < 0) {
    f.tau = -1 / f.slope;
    if (f.dof >= 1) {
      f.tau_lo = -1 / f.slope_lo;                          // steeper slope, shorter tau
      f.tau_hi = f.slope_hi < 0 ? -1 / f.slope_hi : kInf;  // CI reaches 0: unbounded
      if (!(f.slope_hi < 0)) f.flags.push_back("tau_ci_unbounded");
    } else {
      f.tau_lo = f.tau_hi = kNaN;
    }
  } else {
    f.tau = f.tau_lo = f.tau_hi = kNaN;
    f.flags.push_back("no_decay");  // early layers get larger (or equal) gradients
  }
  f.dcrit = 1 + f.tau;
  f.dcrit_lo = 1 + f.tau_lo;
  f.dcrit_hi = 1 + f.tau_hi;
  if (!std::isfinite(f.r2)) f.flags.push_back("r2_undefined");
  else if (f.r2 < o.min_r2) f.flags.push_back("poor_fit");
  if (!f.weighted) f.flags.push_back("unweighted");

  // monotone: the norm should not fall from a layer to the next one up
  f.first_layer_ratio = norms[0] / norms[D - 1];
  bool significant = false;
  for (int l = 0; l + 1 < D; ++l) {
    if (norms[l] > norms[l + 1]) {
      f.non_monotone.emplace_back(l, l + 1);
      bool sig = true;  // without se every violation counts
      if (!se.empty() && se[l] > 0 && se[l + 1] > 0)
        sig = norms[l] - norms[l + 1] > 2 * std::sqrt(se[l] * se[l] + se[l + 1] * se[l + 1]);
      f.non_monotone_significant.push_back(sig);
      significant = significant || sig;
    }
  }
  if (significant) f.flags.push_back("non_monotone");
  else if (!f.non_monotone.empty()) f.flags.push_back("non_monotone_within_noise");
  return f;
}

nlohmann::json to_json(const DecayFit& f) {
  using nlohmann::json;
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };  // JSON has no inf/NaN
  json nm = json::array();
  for (size_t i = 0; i < f.non_monotone.size(); ++i)
    nm.push_back({{"layers", {f.non_monotone[i].first, f.non_monotone[i].second}},
                  {"significant", bool(f.non_monotone_significant[i])}});
  json points = json::array();
  for (int i = 0; i < f.n; ++i)
    points.push_back({{"layer", f.layers[i]}, {"distance", f.distance[i]}, {"log_ratio", f.log_ratio[i]},
                      {"weight", f.weight[i]}, {"residual", f.residual[i]}});
  return {{"depth", f.depth},
          {"n_points", f.n},
          {"dof", f.dof},
          {"weighted", f.weighted},
          {"confidence", f.confidence},
          {"slope", num(f.slope)},
          {"slope_se", num(f.slope_se)},
          {"slope_ci", {num(f.slope_lo), num(f.slope_hi)}},
          {"intercept", num(f.intercept)},
          {"intercept_se", num(f.intercept_se)},
          {"t_quantile", num(f.t_quantile)},
          {"tau", num(f.tau)},
          {"tau_ci", {num(f.tau_lo), num(f.tau_hi)}},
          {"tau_ci_unbounded", std::isinf(f.tau_hi)},
          {"dcrit", num(f.dcrit)},
          {"dcrit_ci", {num(f.dcrit_lo), num(f.dcrit_hi)}},
          {"depth_exceeds_dcrit", std::isfinite(f.dcrit) ? json(f.depth > f.dcrit) : json()},
          {"r2", num(f.r2)},
          {"rmse_log", num(f.rmse)},
          {"first_layer_ratio", num(f.first_layer_ratio)},
          {"predicted_first_layer_ratio",
           std::isfinite(f.tau) ? json(std::exp(f.intercept - double(f.depth - 1) / f.tau)) : json()},
          {"non_monotone", nm},
          {"flags", f.flags},
          {"points", points}};
}

}  // namespace shapelaw::probe
