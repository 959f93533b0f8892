#include "fit/profile.h"

#include <algorithm>
#include <cmath>

namespace shapelaw::fit {

using Eigen::VectorXd;

namespace {

constexpr double kChi2_95_1 = 3.841458820694124;

struct Profiler {
  const Model& m;
  const std::vector<Point>& pts;
  const FitOptions& o;
  int q;
  double rss0;
  int refits = 0;

  // LR statistic with parameter q held at v, warm-started from `start` (updated).
  double stat(double v, VectorXd& start) {
    Model held = m;
    fix_parameters(held, {{m.param_names()[q], v}});
    VectorXd s = start;
    s[q] = v;
    LMResult r = refit(held, pts, {s}, o);
    ++refits;
    if (!std::isfinite(r.objective)) return INFINITY;
    VectorXd res;
    if (!joint_residuals(held, pts, r.p, o.log_space, res, nullptr)) return INFINITY;
    start = r.p;
    double rss = res.squaredNorm();
    return (double)pts.size() * std::log(std::max(rss, 1e-300) / std::max(rss0, 1e-300));
  }

  // Walks from the optimum in direction dir until the statistic crosses the threshold.
  double side(const VectorXd& best, int dir, double bound, bool& at_bound) {
    double v0 = best[q];
    double h = std::max(0.02 * std::abs(v0), 0.01);
    VectorXd warm = best;
    double inside = v0, outside = NAN;
    at_bound = false;
    for (int k = 0; k < 40; ++k) {
      double v = v0 + dir * h;
      if ((dir > 0 && v >= bound) || (dir < 0 && v <= bound)) v = bound;
      VectorXd trial = warm;
      double s = stat(v, trial);
      if (s > kChi2_95_1) {
        outside = v;
        break;
      }
      inside = v;
      warm = trial;
      if (v == bound) {
        at_bound = true;
        return bound;
      }
      h *= 2;
    }
    if (std::isnan(outside)) {
      at_bound = true;
      return inside;
    }
    for (int k = 0; k < 30 && std::abs(outside - inside) > 1e-6 * std::max(1.0, std::abs(v0)); ++k) {
      double mid = 0.5 * (inside + outside);
      VectorXd trial = warm;
      if (stat(mid, trial) > kChi2_95_1) outside = mid;
      else { inside = mid; warm = trial; }
    }
    return 0.5 * (inside + outside);
  }
};

}  // namespace

ProfileInterval profile_interval(const Model& m, const std::vector<Point>& pts, const FitResult& fr, int q,
                                 const FitOptions& o) {
  ProfileInterval pi;
  const int t = q - m.n_lin();
  if (t < 0 || t >= m.n_nl() || m.is_fixed(q) || (int)pts.size() <= m.n_free()) return pi;
  FitOptions inner = o;
  inner.threads = 1;
  Profiler pr{m, pts, inner, q, fr.residuals.squaredNorm()};
  pi.lo = pr.side(fr.p, -1, m.nl_lo[t], pi.lo_at_bound);
  pi.hi = pr.side(fr.p, +1, m.nl_hi[t], pi.hi_at_bound);
  pi.refits = pr.refits;
  pi.computed = true;
  return pi;
}

}  // namespace shapelaw::fit
