#pragma once
// Fitting one law to points: variable projection (linear coefficients solved
// exactly for each θ, LM on θ alone with the Kaufman Jacobian), then a joint LM
// polish of all parameters on the exact objective; multi-start over the model's
// θ grid on all cores; Jacobian covariance at the optimum.
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fit/lm.h"
#include "fit/laws.h"

namespace shapelaw::fit {

struct FitOptions {
  Objective objective;    // least squares or Huber(δ)
  bool log_space = true;  // residuals ln f − ln y (else f − y)
  int threads = 0;        // 0: all cores
  LMOptions lm;
  int screen_iterations = 200;  // per grid start; the best `polish` results then get lm.max_iterations
  int polish = 5;
  // bootstrap and leave-one-out refits start from the full fit's optima within 10% of the
  // best: at most this many of them (0: all; a law with hundreds of near-equal optima,
  // such as the width-depth laws on a long sweep, would refit from every one)
  int resample_starts = 0;
};

struct FitResult {
  Eigen::VectorXd p;  // [lin, nl], Model::param_names order
  double objective = 0;
  bool converged = false;
  std::string status;
  int iterations = 0;
  // multi-start report
  long long total_iterations = 0;  // over all starts
  int n_starts = 0, n_converged = 0, n_at_best = 0, n_distinct_optima = 0;
  std::vector<std::pair<double, int>> optima;  // distinct local optima: objective, #starts (best first, ≤10)
  std::vector<Eigen::VectorXd> optima_params;  // their parameters (≤5), restarts for resampled fits
  // every start's end point with a finite objective, best first (ties by start index):
  // fit/identification.h looks for equally good ones that disagree
  std::vector<std::pair<double, Eigen::VectorXd>> solutions;
  std::vector<bool> at_bound;
  // at the optimum
  Eigen::VectorXd residuals;  // fitting space, weighted
  Eigen::MatrixXd cov;        // Jacobian covariance s²(JᵀJ)⁺
  Eigen::VectorXd se;
  double condition = 0;       // of the weighted Jacobian
  std::vector<std::string> weakly_identified;
};

// The status of a law whose every parameter is held (--fix): evaluated at the held values,
// not fitted; fit_from_theta, refit and fit_multistart all return that one evaluation.
inline constexpr const char* kEvaluatedStatus = "evaluated: every parameter is held (--fix)";

// Residuals in the fitting space, sqrt(weight)-scaled; J = ∂r/∂p when non-null.
bool joint_residuals(const Model& m, const std::vector<Point>& pts, const Eigen::VectorXd& p,
                     bool log_space, Eigen::VectorXd& r, Eigen::MatrixXd* J);

// Variable projection at θ: solves the linear coefficients c exactly by linear least
// squares, returns residuals (loss space; weights 1/y² in log mode, its first-order
// form) and the Kaufman Jacobian with respect to θ. This phase screens every grid
// start; the joint phase then minimizes the chosen objective (Huber, log space).
bool varpro_residuals(const Model& m, const std::vector<Point>& pts, const Eigen::VectorXd& theta,
                      const FitOptions& o, Eigen::VectorXd& r, Eigen::MatrixXd* J, Eigen::VectorXd* c);

// One local fit from θ0 (VarPro then joint polish).
LMResult fit_from_theta(const Model& m, const std::vector<Point>& pts, const Eigen::VectorXd& theta0,
                        const FitOptions& o);
// One local fit from a full parameter vector (joint LM only, then VarPro + joint
// from its θ; the better is kept). Used for bootstrap, LOO and extrapolation refits.
LMResult refit(const Model& m, const std::vector<Point>& pts, const std::vector<Eigen::VectorXd>& starts,
               const FitOptions& o);

// The multi-start grid (cartesian product of Model::nl_grid).
std::vector<Eigen::VectorXd> start_grid(const Model& m);
// extra_starts: full parameter vectors fitted by the joint LM beside the grid (e.g. a nested
// law's optimum with the extra terms at zero, so that a law is never fitted worse than a law
// it contains: the likelihood-ratio test needs both at their optimum).
FitResult fit_multistart(const Model& m, const std::vector<Point>& pts, const FitOptions& o,
                         const std::vector<Eigen::VectorXd>& extra_starts = {});
// Fills residuals, cov, se, condition, at_bound for p.
void finish_fit(const Model& m, const std::vector<Point>& pts, const FitOptions& o, FitResult& fr);

}  // namespace shapelaw::fit
