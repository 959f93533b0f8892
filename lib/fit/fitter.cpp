#include "fit/fitter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>

#include "fit/parallel.h"

namespace shapelaw::fit {

using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

void bounds(const Model& m, VectorXd& lo, VectorXd& hi, bool full) {
  const int off = full ? m.n_lin() : 0;
  lo = VectorXd::Constant(off + m.n_nl(), -kInf);
  hi = VectorXd::Constant(off + m.n_nl(), kInf);
  if (full)
    for (int j = 0; j < m.n_lin(); ++j) {
      lo[j] = m.lin_lo.empty() ? -kInf : m.lin_lo[j];
      hi[j] = m.lin_hi.empty() ? kInf : m.lin_hi[j];
    }
  for (int t = 0; t < m.n_nl(); ++t) {
    lo[off + t] = m.nl_lo[t];
    hi[off + t] = m.nl_hi[t];
  }
}

// A law whose every parameter is held (--fix) is evaluated, not fitted: its parameter
// vector is the held values, its objective that of the data at them.
VectorXd held_parameters(const Model& m) {
  VectorXd p(m.n_params());
  for (int j = 0; j < m.n_lin(); ++j) p[j] = m.lin_lo[j];
  for (int t = 0; t < m.n_nl(); ++t) p[m.n_lin() + t] = m.nl_lo[t];
  return p;
}

LMResult evaluate_held(const Model& m, const std::vector<Point>& pts, const FitOptions& o) {
  LMResult res;
  res.p = held_parameters(m);
  VectorXd r;
  res.evaluations = 1;
  if (joint_residuals(m, pts, res.p, o.log_space, r, nullptr)) {
    res.objective = o.objective.total(r);
    res.converged = true;
    res.status = kEvaluatedStatus;
  } else {
    res.objective = kInf;
    res.status = "the held parameters give a non-positive prediction (log space)";
  }
  return res;
}

}  // namespace

bool joint_residuals(const Model& m, const std::vector<Point>& pts, const VectorXd& p, bool log_space,
                     VectorXd& r, MatrixXd* J) {
  const int n = (int)pts.size(), P = m.n_params();
  r.resize(n);
  if (J) J->resize(n, P);
  VectorXd grad(P);
  for (int i = 0; i < n; ++i) {
    const Point& x = pts[i];
    double sw = std::sqrt(x.weight);
    double f = m.predict_grad(x, p, grad);
    if (log_space) {
      if (!(f > 0)) return false;
      r[i] = sw * (std::log(f) - x.ln_y());
      if (J) J->row(i) = (sw / f) * grad.transpose();
    } else {
      r[i] = sw * (f - x.y);
      if (J) J->row(i) = sw * grad.transpose();
    }
  }
  return true;
}

bool varpro_residuals(const Model& m, const std::vector<Point>& pts, const VectorXd& theta,
                      const FitOptions& o, VectorXd& r, MatrixXd* J, VectorXd* c_out) {
  const int n = (int)pts.size(), mm = m.n_lin(), k = m.n_nl();
  MatrixXd Phi(n, mm);   // sqrt(s)-scaled basis
  std::vector<MatrixXd> dPhi(k, MatrixXd(n, mm));
  VectorXd y(n), ss(n);
  double g[16], dg[256];
  for (int i = 0; i < n; ++i) {
    const Point& x = pts[i];
    double s = x.weight * (o.log_space ? 1.0 / (x.y * x.y) : 1.0);
    ss[i] = std::sqrt(s);
    m.basis(x, theta.data(), g, dg);
    for (int j = 0; j < mm; ++j) {
      Phi(i, j) = ss[i] * g[j];
      for (int t = 0; t < k; ++t) dPhi[t](i, j) = ss[i] * dg[j * k + t];
    }
    y[i] = ss[i] * x.y;
  }
  if (!Phi.allFinite()) return false;
  // inner problem: the linear least-squares solve for the free c (exact; the joint
  // phase then minimizes the chosen objective, Huber included, over all parameters).
  // Coefficients held fixed (--fix) are moved to the right-hand side.
  std::vector<int> free_cols;
  VectorXd c = VectorXd::Zero(mm);
  for (int j = 0; j < mm; ++j) {
    bool fixed = !m.lin_hi.empty() && m.lin_lo[j] == m.lin_hi[j];
    if (fixed) {
      c[j] = m.lin_lo[j];
      y -= c[j] * Phi.col(j);
    } else {
      free_cols.push_back(j);
    }
  }
  MatrixXd Pf(n, free_cols.size());
  for (size_t q = 0; q < free_cols.size(); ++q) Pf.col(q) = Phi.col(free_cols[q]);
  // Eigen's QR of a matrix without columns crashes: every coefficient held, nothing to solve
  Eigen::ColPivHouseholderQR<MatrixXd> qr;
  if (!free_cols.empty()) qr.compute(Pf);
  VectorXd cf = VectorXd::Zero(free_cols.size());
  if (!free_cols.empty()) {
    cf = qr.solve(y);
    if (!cf.allFinite()) return false;
    for (size_t q = 0; q < free_cols.size(); ++q) c[free_cols[q]] = cf[q];
  }
  r = Pf * cf - y;
  if (c_out) *c_out = c;
  if (J) {
    MatrixXd Jp(n, k);
    for (int t = 0; t < k; ++t) Jp.col(t) = dPhi[t] * c;
    // Kaufman's variable-projection Jacobian: J = (I − ΦΦ⁺) ∂Φ/∂θ c
    *J = free_cols.empty() ? Jp : MatrixXd(Jp - Pf * qr.solve(Jp));
  }
  return r.allFinite();
}

LMResult fit_from_theta(const Model& m, const std::vector<Point>& pts, const VectorXd& theta0,
                        const FitOptions& o) {
  if (m.n_free() == 0) return evaluate_held(m, pts, o);
  VectorXd lo, hi;
  bounds(m, lo, hi, false);
  VectorXd theta = theta0;
  LMResult phase1;
  phase1.converged = true;
  if (m.n_nl() > 0) {
    auto f = [&](const VectorXd& th, VectorXd& r, MatrixXd* J) {
      return varpro_residuals(m, pts, th, o, r, J, nullptr);
    };
    Objective ls;
    ls.kind = Objective::LeastSquares;
    LMOptions lm1 = o.lm;
    lm1.max_iterations = std::min(o.lm.max_iterations, o.screen_iterations);
    phase1 = levenberg_marquardt(f, theta0, lo, hi, ls, lm1);
    if (!std::isfinite(phase1.objective)) return phase1;
    theta = phase1.p;
  }
  VectorXd r, c;
  if (!varpro_residuals(m, pts, theta, o, r, nullptr, &c)) {
    LMResult bad;
    bad.objective = kInf;
    bad.status = "invalid start";
    return bad;
  }
  VectorXd p(m.n_params());
  p << c, theta;
  VectorXd flo, fhi;
  bounds(m, flo, fhi, true);
  auto fj = [&](const VectorXd& pp, VectorXd& rr, MatrixXd* J) {
    return joint_residuals(m, pts, pp, o.log_space, rr, J);
  };
  LMOptions lm2 = o.lm;
  lm2.max_iterations = std::min(o.lm.max_iterations, o.screen_iterations);
  LMResult res = levenberg_marquardt(fj, p, flo, fhi, o.objective, lm2);
  res.iterations += phase1.iterations;
  res.evaluations += phase1.evaluations;
  return res;
}

LMResult refit(const Model& m, const std::vector<Point>& pts, const std::vector<VectorXd>& starts,
               const FitOptions& o) {
  if (m.n_free() == 0) return evaluate_held(m, pts, o);
  VectorXd flo, fhi;
  bounds(m, flo, fhi, true);
  auto fj = [&](const VectorXd& pp, VectorXd& rr, MatrixXd* J) {
    return joint_residuals(m, pts, pp, o.log_space, rr, J);
  };
  LMResult best;
  best.objective = kInf;
  LMOptions capped = o.lm;
  capped.max_iterations = std::min(o.lm.max_iterations, 50);
  for (size_t q = 0; q < starts.size(); ++q) {
    // the first start (the full-data optimum) gets the full budget, alternatives 50 iterations
    LMResult a = levenberg_marquardt(fj, starts[q], flo, fhi, o.objective, q == 0 ? o.lm : capped);
    if (a.objective < best.objective) best = a;
  }
  if (!std::isfinite(best.objective) && !starts.empty()) {
    LMResult b = fit_from_theta(m, pts, starts[0].tail(m.n_nl()), o);
    if (b.objective < best.objective) best = b;
  }
  return best;
}

std::vector<VectorXd> start_grid(const Model& m) {
  std::vector<VectorXd> out(1, VectorXd(m.n_nl()));
  for (int t = 0; t < m.n_nl(); ++t) {
    std::vector<VectorXd> next;
    for (const auto& base : out)
      for (double v : m.nl_grid[t]) {
        VectorXd s = base;
        s[t] = v;
        next.push_back(s);
      }
    out.swap(next);
  }
  return out;
}

void finish_fit(const Model& m, const std::vector<Point>& pts, const FitOptions& o, FitResult& fr) {
  const int n = (int)pts.size(), P = m.n_params();
  MatrixXd J;
  joint_residuals(m, pts, fr.p, o.log_space, fr.residuals, &J);
  for (int q = 0; q < P; ++q)
    if (m.is_fixed(q)) J.col(q).setZero();  // held parameters carry no uncertainty
  fr.at_bound.assign(P, false);
  for (int j = 0; j < m.n_lin(); ++j) {
    double lo = m.lin_lo.empty() ? -kInf : m.lin_lo[j], hi = m.lin_hi.empty() ? kInf : m.lin_hi[j];
    double tol = 1e-12 * std::max(1.0, std::abs(fr.p[j]));
    fr.at_bound[j] = lo < hi && ((std::isfinite(lo) && fr.p[j] <= lo + tol) || (std::isfinite(hi) && fr.p[j] >= hi - tol));
  }
  for (int t = 0; t < m.n_nl(); ++t) {
    double v = fr.p[m.n_lin() + t];
    double tol = 1e-9 * std::max(1.0, std::abs(v));
    fr.at_bound[m.n_lin() + t] = m.nl_lo[t] < m.nl_hi[t] && (v <= m.nl_lo[t] + tol || v >= m.nl_hi[t] - tol);
  }
  // column-scaled SVD: condition number and weakly identified directions
  VectorXd colnorm = J.colwise().norm();
  MatrixXd Js = J;
  for (int j = 0; j < P; ++j) Js.col(j) /= (colnorm[j] > 0 ? colnorm[j] : 1);
  Eigen::JacobiSVD<MatrixXd> svd(Js, Eigen::ComputeThinV);
  VectorXd sv = svd.singularValues();
  double smax = sv.size() ? sv[0] : 0, smin = sv.size() ? sv[sv.size() - 1] : 0;
  fr.condition = smin > 0 ? smax / smin : kInf;
  fr.weakly_identified.clear();
  auto names = m.param_names();
  for (int q = 0; q < sv.size(); ++q) {
    if (sv[q] > 1e-10 * smax) continue;
    for (int j = 0; j < P; ++j)
      if (!m.is_fixed(j) && std::abs(svd.matrixV()(j, q)) > 0.1 &&
          std::find(fr.weakly_identified.begin(), fr.weakly_identified.end(), names[j]) == fr.weakly_identified.end())
        fr.weakly_identified.push_back(names[j]);
  }
  for (int j = 0; j < P; ++j)
    if (colnorm[j] == 0 && !m.is_fixed(j) && std::find(fr.weakly_identified.begin(), fr.weakly_identified.end(), names[j]) ==
                               fr.weakly_identified.end())
      fr.weakly_identified.push_back(names[j]);
  // covariance s²(JᵀJ)⁻¹ with s² = Σr²/(n−k), computed from the column-scaled Jacobian so
  // that parameters of very different scales do not hide each other; a direction whose
  // singular value is negligible is not estimable: its parameters get se = ∞ (null in
  // JSON) and are listed as weakly identified, never a falsely small se.
  double dof = std::max(1, n - m.n_free());
  double s2 = fr.residuals.squaredNorm() / dof;
  VectorXd inv(sv.size());
  std::vector<int> degenerate;
  for (int q = 0; q < sv.size(); ++q) {
    if (sv[q] > 1e-10 * smax) inv[q] = 1.0 / (sv[q] * sv[q]);
    else { inv[q] = 0; degenerate.push_back(q); }
  }
  VectorXd sinv(P);
  for (int j = 0; j < P; ++j) sinv[j] = colnorm[j] > 0 ? 1.0 / colnorm[j] : 0.0;
  MatrixXd covs = svd.matrixV() * inv.asDiagonal() * svd.matrixV().transpose();
  fr.cov = s2 * sinv.asDiagonal() * covs * sinv.asDiagonal();
  fr.se = fr.cov.diagonal().cwiseMax(0).cwiseSqrt();
  for (int q : degenerate)
    for (int j = 0; j < P; ++j)
      if (!m.is_fixed(j) && std::abs(svd.matrixV()(j, q)) > 0.1) fr.se[j] = std::numeric_limits<double>::infinity();
  for (int j = 0; j < P; ++j)
    if (colnorm[j] == 0 && !m.is_fixed(j)) fr.se[j] = std::numeric_limits<double>::infinity();
  if (n <= m.n_free()) fr.se.setConstant(std::numeric_limits<double>::quiet_NaN());
}

FitResult fit_multistart(const Model& m, const std::vector<Point>& pts, const FitOptions& o,
                         const std::vector<VectorXd>& extra_starts) {
  auto starts = start_grid(m);
  if (m.n_free() == 0) starts.resize(1);  // one evaluation at the held values
  const size_t n_grid = starts.size(), n_extra = m.n_free() == 0 ? 0 : extra_starts.size();
  std::vector<LMResult> results(n_grid + n_extra);
  parallel_for(results.size(), o.threads, [&](size_t i) {
    if (i < n_grid) {
      results[i] = fit_from_theta(m, pts, starts[i], o);
    } else {  // screened like a grid start; the polish below gives the best the full budget
      FitOptions screen = o;
      screen.lm.max_iterations = std::min(o.lm.max_iterations, o.screen_iterations);
      results[i] = refit(m, pts, {extra_starts[i - n_grid]}, screen);
    }
  });
  // polish the best few distinct results with the full iteration budget
  if (m.n_free() > 0) {
    std::vector<size_t> idx(results.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return results[a].objective < results[b].objective; });
    VectorXd flo, fhi;
    bounds(m, flo, fhi, true);
    auto fj = [&](const VectorXd& pp, VectorXd& rr, MatrixXd* J) {
      return joint_residuals(m, pts, pp, o.log_space, rr, J);
    };
    std::vector<size_t> chosen;
    for (size_t i : idx) {
      if (chosen.size() >= (size_t)o.polish || !std::isfinite(results[i].objective)) break;
      bool dup = false;
      for (size_t c : chosen)
        if ((results[c].p - results[i].p).cwiseAbs().maxCoeff() <= 1e-6 * (results[c].p.cwiseAbs().maxCoeff() + 1e-12))
          dup = true;
      if (!dup) chosen.push_back(i);
    }
    parallel_for(chosen.size(), o.threads, [&](size_t q) {
      LMResult& r = results[chosen[q]];
      LMResult pol = levenberg_marquardt(fj, r.p, flo, fhi, o.objective, o.lm);
      pol.iterations += r.iterations;
      if (pol.objective <= r.objective) r = pol;
    });
  }
  FitResult fr;
  fr.n_starts = (int)results.size();
  std::vector<size_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return results[a].objective < results[b].objective;
  });
  const LMResult& best = results[order[0]];
  fr.p = best.p;
  fr.objective = best.objective;
  fr.converged = best.converged;
  fr.status = best.status;
  fr.iterations = best.iterations;
  for (const auto& r : results) {
    fr.total_iterations += r.iterations;
    if (r.converged && std::isfinite(r.objective)) ++fr.n_converged;
    if (std::isfinite(r.objective) && r.objective <= best.objective + 1e-7 * std::abs(best.objective) + 1e-300)
      ++fr.n_at_best;
  }
  // distinct optima: objective within 1e-7 (relative) and parameters within 1e-4 (relative)
  std::vector<size_t> reps;
  std::vector<int> counts;
  for (size_t i : order) {
    if (!std::isfinite(results[i].objective)) continue;
    bool merged = false;
    for (size_t q = 0; q < reps.size(); ++q) {
      const LMResult& a = results[reps[q]];
      const LMResult& b = results[i];
      double dobj = std::abs(a.objective - b.objective);
      double dp = ((a.p - b.p).cwiseAbs().array() / (a.p.cwiseAbs().array() + 1e-8)).maxCoeff();
      if (dobj <= 1e-7 * std::abs(a.objective) + 1e-300 && dp < 1e-4) {
        ++counts[q];
        merged = true;
        break;
      }
    }
    if (!merged) {
      reps.push_back(i);
      counts.push_back(1);
    }
  }
  for (size_t i : order)
    if (std::isfinite(results[i].objective)) fr.solutions.emplace_back(results[i].objective, results[i].p);
  fr.n_distinct_optima = (int)reps.size();
  for (size_t q = 0; q < reps.size() && q < 10; ++q) fr.optima.push_back({results[reps[q]].objective, counts[q]});
  for (size_t q = 0; q < reps.size() && q < 3; ++q) fr.optima_params.push_back(results[reps[q]].p);
  finish_fit(m, pts, o, fr);
  return fr;
}

}  // namespace shapelaw::fit
