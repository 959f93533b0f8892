#pragma once
// Levenberg–Marquardt in double precision for Σ ρ(r_i(p)), ρ = ½r² (least squares)
// or Huber(δ). Huber is handled by iteratively reweighted Gauss–Newton steps
// (weights ρ'(r)/r) with every step accepted only if the true objective drops.
// Box bounds by projection with an active set. Tolerances are tight and relative:
// the objective is a sum (not a mean), so small losses do not stop it early.
#include <functional>
#include <string>

#include <Eigen/Dense>

namespace shapelaw::fit {

struct Objective {
  enum Kind { LeastSquares, Huber } kind = Huber;
  double delta = 1e-3;

  double rho(double r) const;
  double psi(double r) const;     // ρ'(r)
  double weight(double r) const;  // ρ'(r)/r (IRLS weight), 1 inside the quadratic zone
  double total(const Eigen::VectorXd& r) const;
  std::string describe() const;
};

struct LMOptions {
  int max_iterations = 1000;
  double ftol = 1e-14;  // relative objective decrease of an accepted step
  double xtol = 1e-11;  // relative step
  double gtol = 1e-13;  // scaled gradient
};

struct LMResult {
  Eigen::VectorXd p;
  double objective = 0;
  int iterations = 0;
  int evaluations = 0;
  bool converged = false;
  std::string status;
};

// Residuals (and Jacobian when J != nullptr) at p; false when p is outside the
// model's domain (e.g. a non-positive prediction in log space).
using ResidualFn = std::function<bool(const Eigen::VectorXd& p, Eigen::VectorXd& r, Eigen::MatrixXd* J)>;

LMResult levenberg_marquardt(const ResidualFn& f, const Eigen::VectorXd& p0, const Eigen::VectorXd& lo,
                             const Eigen::VectorXd& hi, const Objective& objective,
                             const LMOptions& options = {});

}  // namespace shapelaw::fit
