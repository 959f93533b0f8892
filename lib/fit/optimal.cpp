#include "fit/optimal.h"

#include <cmath>
#include <limits>

#include "fit/stats.h"

namespace shapelaw::fit {

bool optimal_applicable(const Model& m, std::string* reason) {
  if (m.response != "loss") {
    if (reason) *reason = "not a loss law";
    return false;
  }
  if (!m.uses_T || m.index_of("B") < 0) {
    if (reason)
      *reason = m.uses_T ? "tokens T do not vary in the data, so the law cannot trade N against T"
                         : "the law has no data term, so the loss only falls with N at any compute";
    return false;
  }
  return true;
}

OptimalCurve compute_optimal(const Model& m, const Eigen::VectorXd& p, const OptimalOptions& o) {
  OptimalCurve out;
  if (!optimal_applicable(m, &out.reason)) return out;
  out.available = true;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double lw0 = std::log(o.w_min), lw1 = std::log(o.w_max);
  bool all_unique = true;
  std::vector<double> lc, ln, lt, ldh, lwh, ldl, lwl;
  bool dhi_ok = true, dlo_ok = true;
  for (int ci = 0; ci < o.n_c; ++ci) {
    double C = std::exp(std::log(o.c_min) + (std::log(o.c_max) - std::log(o.c_min)) * ci / std::max(1, o.n_c - 1));
    auto L = [&](double D, double lnW) {
      Point x;
      x.D = D;
      x.W = std::exp(lnW);
      x.N = 12.0 * D * x.W * x.W;
      x.T = C / (6.0 * x.N);
      double v = m.predict(x, p);
      return std::isfinite(v) ? v : std::numeric_limits<double>::infinity();
    };
    std::vector<double> Ls(o.n_d), Ws(o.n_d), Ds(o.n_d);
    std::vector<char> wedge(o.n_d, 0);
    for (int di = 0; di < o.n_d; ++di) {
      double D = std::exp(std::log(o.d_min) + (std::log(o.d_max) - std::log(o.d_min)) * di / std::max(1, o.n_d - 1));
      Ds[di] = D;
      const int S = 24;
      int best = 0;
      double bestL = std::numeric_limits<double>::infinity();
      for (int s = 0; s <= S; ++s) {
        double v = L(D, lw0 + (lw1 - lw0) * s / S);
        if (v < bestL) { bestL = v; best = s; }
      }
      double a = lw0 + (lw1 - lw0) * std::max(0, best - 1) / S, b = lw0 + (lw1 - lw0) * std::min(S, best + 1) / S;
      const double g = 0.5 * (std::sqrt(5.0) - 1);
      double x1 = b - g * (b - a), x2 = a + g * (b - a), f1 = L(D, x1), f2 = L(D, x2);
      for (int it = 0; it < 80 && b - a > 1e-9; ++it) {
        if (f1 < f2) { b = x2; x2 = x1; f2 = f1; x1 = b - g * (b - a); f1 = L(D, x1); }
        else { a = x1; x1 = x2; f1 = f2; x2 = a + g * (b - a); f2 = L(D, x2); }
      }
      double lw = 0.5 * (a + b);
      Ls[di] = L(D, lw);
      Ws[di] = std::exp(lw);
      wedge[di] = (lw - lw0 < 1e-3 || lw1 - lw < 1e-3);
    }
    int bi = 0;
    for (int di = 1; di < o.n_d; ++di)
      if (Ls[di] < Ls[bi]) bi = di;
    double tol = 1e-10 * std::max(1.0, std::abs(Ls[bi]));
    int lo = bi, hi = bi;
    while (lo > 0 && Ls[lo - 1] <= Ls[bi] + tol) --lo;
    while (hi + 1 < o.n_d && Ls[hi + 1] <= Ls[bi] + tol) ++hi;
    OptimalPoint pt;
    pt.C = C;
    pt.L = Ls[bi];
    pt.D_lo = Ds[lo];
    pt.D_hi = Ds[hi];
    pt.W_at_D_lo = Ws[lo];
    pt.W_at_D_hi = Ws[hi];
    pt.N = 12.0 * Ds[bi] * Ws[bi] * Ws[bi];
    pt.T = C / (6.0 * pt.N);
    pt.boundary = wedge[bi] || !std::isfinite(pt.L);
    if (hi > lo) all_unique = false;
    out.points.push_back(pt);
    if (!pt.boundary) {
      lc.push_back(std::log(C));
      ln.push_back(std::log(pt.N));
      lt.push_back(std::log(pt.T));
      ldh.push_back(std::log(pt.D_hi));
      lwh.push_back(std::log(pt.W_at_D_hi));
      ldl.push_back(std::log(pt.D_lo));
      lwl.push_back(std::log(pt.W_at_D_lo));
      if (hi == o.n_d - 1) dhi_ok = false;
      if (lo == 0) dlo_ok = false;
    }
  }
  out.shape_unique = all_unique;
  out.n_interior = (int)lc.size();
  if (out.n_interior >= 2) {
    out.slope_N = ols_slope(lc, ln);
    out.slope_T = ols_slope(lc, lt);
    if (!o.shapes) dhi_ok = dlo_ok = false;
    out.slope_D_hi = dhi_ok ? ols_slope(lc, ldh) : nan;
    out.slope_W_at_D_hi = dhi_ok ? ols_slope(lc, lwh) : nan;
    out.slope_D_lo = dlo_ok ? ols_slope(lc, ldl) : nan;
    out.slope_W_at_D_lo = dlo_ok ? ols_slope(lc, lwl) : nan;
  } else {
    out.slope_N = out.slope_T = out.slope_D_hi = out.slope_W_at_D_hi = out.slope_D_lo = out.slope_W_at_D_lo = nan;
    out.reason = "the optimum lies on the search boundary at every compute (the law has no interior minimum)";
  }
  return out;
}

}  // namespace shapelaw::fit
