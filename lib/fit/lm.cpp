#include "fit/lm.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace shapelaw::fit {

double Objective::rho(double r) const {
  if (kind == LeastSquares) return 0.5 * r * r;
  double a = std::abs(r);
  return a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
}
double Objective::psi(double r) const {
  if (kind == LeastSquares) return r;
  return std::abs(r) <= delta ? r : (r > 0 ? delta : -delta);
}
double Objective::weight(double r) const {
  if (kind == LeastSquares) return 1;
  double a = std::abs(r);
  return a <= delta ? 1 : delta / a;
}
double Objective::total(const Eigen::VectorXd& r) const {
  double s = 0;
  for (Eigen::Index i = 0; i < r.size(); ++i) s += rho(r[i]);
  return s;
}
std::string Objective::describe() const {
  if (kind == LeastSquares) return "least-squares";
  char buf[64];
  std::snprintf(buf, sizeof buf, "huber(delta=%g)", delta);
  return buf;
}

LMResult levenberg_marquardt(const ResidualFn& f, const Eigen::VectorXd& p0, const Eigen::VectorXd& lo,
                             const Eigen::VectorXd& hi, const Objective& obj, const LMOptions& opt) {
  using Eigen::MatrixXd;
  using Eigen::VectorXd;
  const Eigen::Index k = p0.size();
  LMResult res;
  VectorXd p = p0.cwiseMax(lo).cwiseMin(hi);
  VectorXd r, r_new;
  MatrixXd J;
  res.evaluations = 1;
  if (!f(p, r, &J) || !r.allFinite() || !J.allFinite()) {
    res.p = p;
    res.objective = std::numeric_limits<double>::infinity();
    res.status = "invalid start";
    return res;
  }
  double F = obj.total(r);
  double lambda = 1e-3;
  VectorXd scale = VectorXd::Zero(k);  // Moré scaling: running max of diag(JᵀWJ)
  for (int it = 0; it < opt.max_iterations; ++it) {
    res.iterations = it + 1;
    VectorXd w(r.size()), psi(r.size());
    for (Eigen::Index i = 0; i < r.size(); ++i) {
      w[i] = obj.weight(r[i]);
      psi[i] = obj.psi(r[i]);
    }
    MatrixXd H = J.transpose() * w.asDiagonal() * J;
    VectorXd g = J.transpose() * psi;
    for (Eigen::Index i = 0; i < k; ++i) scale[i] = std::max(scale[i], H(i, i));
    // active set: parameters at a bound whose descent direction points outward
    std::vector<int> free_idx;
    for (Eigen::Index i = 0; i < k; ++i) {
      if (lo[i] == hi[i]) continue;  // held fixed
      bool at_lo = p[i] <= lo[i] && g[i] > 0;
      bool at_hi = p[i] >= hi[i] && g[i] < 0;
      if (!at_lo && !at_hi) free_idx.push_back((int)i);
    }
    double gnorm = 0;
    for (int i : free_idx) gnorm = std::max(gnorm, std::abs(g[i]) * std::sqrt(1.0 / std::max(scale[i], 1e-300)));
    if (free_idx.empty() || gnorm <= opt.gtol * std::sqrt(std::max(F, 1e-300))) {
      res.converged = true;
      res.status = free_idx.empty() ? "all parameters at bounds" : "gradient";
      break;
    }
    const int kf = (int)free_idx.size();
    MatrixXd Hf(kf, kf);
    VectorXd gf(kf);
    for (int a = 0; a < kf; ++a) {
      gf[a] = g[free_idx[a]];
      for (int b = 0; b < kf; ++b) Hf(a, b) = H(free_idx[a], free_idx[b]);
    }
    bool accepted = false, negligible = false;
    while (lambda < 1e25) {
      MatrixXd A = Hf;
      for (int a = 0; a < kf; ++a) A(a, a) += lambda * std::max(scale[free_idx[a]], 1e-300);
      VectorXd step = A.ldlt().solve(-gf);
      if (!step.allFinite()) { lambda *= 10; continue; }
      // the model's predicted decrease; when it is below ftol·F no step can matter
      double predicted = -gf.dot(step) - 0.5 * step.dot(Hf * step);
      if (predicted <= 0.1 * opt.ftol * F) { negligible = true; break; }
      VectorXd p_new = p;
      for (int a = 0; a < kf; ++a) p_new[free_idx[a]] += step[a];
      p_new = p_new.cwiseMax(lo).cwiseMin(hi);
      ++res.evaluations;
      if (f(p_new, r_new, nullptr) && r_new.allFinite()) {
        double F_new = obj.total(r_new);
        MatrixXd J_new;
        if (F_new < F && f(p_new, r_new, &J_new) && J_new.allFinite()) {
          double dx = (p_new - p).norm(), xn = p.norm();
          double dF = F - F_new;
          p = p_new;
          r = r_new;
          J = J_new;
          F = F_new;
          lambda = std::max(lambda / 3, 1e-15);
          accepted = true;
          if (dx <= opt.xtol * (xn + opt.xtol)) { res.converged = true; res.status = "step"; }
          else if (dF <= opt.ftol * F) { res.converged = true; res.status = "objective"; }
          break;
        }
      }
      lambda *= 4;
    }
    if (negligible) {
      res.converged = true;
      res.status = "predicted decrease below tolerance";
      break;
    }
    if (!accepted) {
      // no descent step exists at any damping: a (numerically) stationary point
      res.converged = true;
      res.status = "no further descent";
      break;
    }
    if (res.converged) break;
  }
  if (!res.converged) res.status = "iteration limit";
  res.p = p;
  res.objective = F;
  return res;
}

}  // namespace shapelaw::fit
