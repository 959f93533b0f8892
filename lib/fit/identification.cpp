#include "fit/identification.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace shapelaw::fit {

namespace {

std::string g(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

std::string Identification::message() const {
  if (identified()) return "";
  std::string names, ranges_text;
  for (const auto& r : ranges) {
    if (r.identified) continue;
    names += (names.empty() ? "" : ", ") + r.name;
    ranges_text += (ranges_text.empty() ? "" : ", ") + r.name + " in [" + g(r.lo) + ", " + g(r.hi) + "]";
  }
  return names + " not identified: objective within " + g(tolerance) + " (relative) of the best over " + ranges_text +
         " (" + std::to_string(solutions_within) + " multi-start solution(s) that close)";
}

Identification identify(const Model& m, const std::vector<Point>& pts, const FitResult& fr, const FitOptions& o,
                        double tolerance) {
  Identification id;
  id.tolerance = tolerance;
  const int P = m.n_params();
  const double inf = std::numeric_limits<double>::infinity();
  const double F = fr.objective, band = tolerance * std::abs(F);
  Eigen::VectorXd lo = fr.p, hi = fr.p;
  for (const auto& [obj, p] : fr.solutions) {
    if (!(obj <= F + band)) break;  // best first
    ++id.solutions_within;
    lo = lo.cwiseMin(p);
    hi = hi.cwiseMax(p);
  }
  // the quadratic model: H = JᵀWJ on the free parameters, column-scaled for the inverse
  Eigen::VectorXd r;
  Eigen::MatrixXd J;
  std::vector<int> free_idx;
  for (int q = 0; q < P; ++q)
    if (!m.is_fixed(q)) free_idx.push_back(q);
  if (!free_idx.empty() && joint_residuals(m, pts, fr.p, o.log_space, r, &J)) {
    const int k = (int)free_idx.size();
    Eigen::MatrixXd Jf(J.rows(), k);
    for (int a = 0; a < k; ++a) Jf.col(a) = J.col(free_idx[a]);
    for (Eigen::Index i = 0; i < r.size(); ++i) Jf.row(i) *= std::sqrt(o.objective.weight(r[i]));
    Eigen::VectorXd norm = Jf.colwise().norm();
    for (int a = 0; a < k; ++a) Jf.col(a) /= norm[a] > 0 ? norm[a] : 1.0;
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(Jf, Eigen::ComputeThinV);
    const Eigen::VectorXd sv = svd.singularValues();
    const double smax = sv.size() ? sv[0] : 0;
    for (int a = 0; a < k; ++a) {
      const int q = free_idx[a];
      double var = 0;  // [H⁻¹]_jj in scaled units
      bool unbounded = norm[a] == 0;
      for (int s = 0; s < sv.size(); ++s) {
        const double v = svd.matrixV()(a, s);
        if (v == 0) continue;
        if (sv[s] <= 1e-14 * smax) {
          if (std::abs(v) > 1e-8) unbounded = true;
          continue;
        }
        var += v * v / (sv[s] * sv[s]);
      }
      const double half = unbounded ? inf : std::sqrt(2.0 * band * var) / norm[a];
      lo[q] = std::min(lo[q], fr.p[q] - half);
      hi[q] = std::max(hi[q], fr.p[q] + half);
    }
  }
  // a parameter's natural size, for parameters near zero: a nonlinear one's largest start
  // value; a linear coefficient's, the value that makes its term as large as the mean response
  std::vector<double> natural(P, 0.0);
  {
    double ybar = 0;
    for (const auto& x : pts) ybar += std::abs(x.y) / double(pts.size());
    std::vector<double> gmax(m.n_lin(), 0.0);
    double gbuf[16], dgbuf[256];
    for (const auto& x : pts) {
      m.basis(x, fr.p.data() + m.n_lin(), gbuf, dgbuf);
      for (int j = 0; j < m.n_lin(); ++j) gmax[j] = std::max(gmax[j], std::abs(gbuf[j]));
    }
    for (int j = 0; j < m.n_lin(); ++j) natural[j] = gmax[j] > 0 ? ybar / gmax[j] : 0;
    for (int t = 0; t < m.n_nl(); ++t)
      for (double v : m.nl_grid[t]) natural[m.n_lin() + t] = std::max(natural[m.n_lin() + t], std::abs(v));
  }
  for (int q = 0; q < P; ++q) {
    if (m.is_fixed(q)) continue;
    double blo = -inf, bhi = inf;
    if (q < m.n_lin()) {
      if (!m.lin_lo.empty()) blo = m.lin_lo[q];
      if (!m.lin_hi.empty()) bhi = m.lin_hi[q];
    } else {
      blo = m.nl_lo[q - m.n_lin()];
      bhi = m.nl_hi[q - m.n_lin()];
    }
    ParameterRange pr;
    pr.name = m.param_names()[q];
    pr.lo = std::max(lo[q], blo);
    pr.hi = std::min(hi[q], bhi);
    const double width = pr.hi - pr.lo, size = std::max({std::abs(pr.lo), std::abs(pr.hi), natural[q]});
    pr.identified = std::isfinite(width) && !(width > 1e-3 * size);
    if (!pr.identified) id.not_identified.push_back(pr.name);
    id.ranges.push_back(pr);
  }
  return id;
}

}  // namespace shapelaw::fit
