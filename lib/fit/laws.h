#pragma once
// The registry of named laws. Every law is separable: prediction = Σ_j c_j·g_j(x; θ)
// with linear coefficients c (solved exactly by variable projection) and nonlinear
// parameters θ (searched by Levenberg–Marquardt), so one optimizer fits them all.
// Adding a law = one entry in laws.cpp (basis functions with analytic ∂g/∂θ).
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "fit/capacity.h"

namespace shapelaw::fit {

struct Point {
  double D = 0, W = 0, N = 0, T = 0;
  double y = 0;       // observed response (loss or tau)
  double weight = 1;  // case weight (1, or 1/se² with --weights se)
  // ln D, ln W, ln N, ln T, ln y, filled by cache_logs() (NaN until then: the laws take the log
  // themselves). A fit evaluates every law at every point thousands of times, and the logs
  // were a fifth of its time; cached or not, the same std::log gives the same bits.
  double lnD = std::numeric_limits<double>::quiet_NaN(), lnW = lnD, lnN = lnD, lnT = lnD, lny = lnD;
  void cache_logs() {
    lnD = std::log(D);
    lnW = std::log(W);
    lnN = std::log(N);
    lnT = std::log(T);
    lny = std::log(y);
  }
  double ln_y() const { return lny == lny ? lny : std::log(y); }
  double ln_D() const { return lnD == lnD ? lnD : std::log(D); }
  double ln_W() const { return lnW == lnW ? lnW : std::log(W); }
  double ln_N() const { return lnN == lnN ? lnN : std::log(N); }
  double ln_T() const { return lnT == lnT ? lnT : std::log(T); }
};

struct Model {
  std::string name, formula;
  std::string response = "loss";  // "loss" or "tau"
  std::vector<std::string> lin_names, nl_names;
  std::vector<double> lin_lo;  // lower bounds of linear coefficients (empty: none)
  std::vector<double> lin_hi;  // upper bounds (empty: none)
  std::vector<std::string> fixed;  // parameters held at a given value (--fix)
  std::vector<double> nl_lo, nl_hi;
  std::vector<std::vector<double>> nl_grid;  // multi-start grid per nonlinear parameter
  // g[j] for j < n_lin; dg[j*n_nl + t] = ∂g_j/∂θ_t.
  std::function<void(const Point&, const double* theta, double* g, double* dg)> basis;
  std::vector<std::string> not_identifiable;  // paper names dropped because inputs do not vary
  std::vector<std::string> notes;
  std::string dcrit_form;  // "", "log" (kappa) or "power" (c, a)
  // The capacity term A/N^alpha + constant fitted as L1 + s*(N^-alpha - 1)/alpha (s = A*alpha,
  // L1 = A + constant): one smooth surface through alpha = 0, where A and the constant run off
  // to ±infinity together. A and the constant are then derived quantities.
  bool box_cox = false;
  std::string constant;  // the constant linear coefficient ("B_T", "E", "L1"), "" if none
  bool has_phi = false, uses_T = false;
  bool uses_shape = false;  // needs depth and width (Φ, τ(W))
  // The function family as additive terms with their bounds, names aside ("c*N^-t t[-2,5]",
  // "const"): two laws with the same terms are the same law (paper-log and paper-log-E when
  // T does not vary, no-phi / kaplan-E / chinchilla then too).
  std::vector<std::string> terms;
  // Quantities derived from the parameters, reported with bootstrap CIs (kaplan: N_c = A^(1/α)).
  std::vector<std::pair<std::string, std::function<double(const Eigen::VectorXd&)>>> derived;

  int n_lin() const { return static_cast<int>(lin_names.size()); }
  int n_nl() const { return static_cast<int>(nl_names.size()); }
  int n_params() const { return n_lin() + n_nl(); }
  // Full parameter vector p = [c (lin_names), θ (nl_names)]; param_names in that order.
  std::vector<std::string> param_names() const;
  int index_of(const std::string& name) const;  // -1 if absent
  double predict(const Point& x, const Eigen::VectorXd& p) const;
  // ∂prediction/∂p (size n_params); returns the prediction.
  double predict_grad(const Point& x, const Eigen::VectorXd& p, Eigen::VectorXd& grad) const;
  // D_crit(W) for laws with a Φ term (NaN otherwise).
  double dcrit(double W, const Eigen::VectorXd& p) const;
  bool is_fixed(int q) const;
  int n_free() const { return n_params() - (int)fixed.size(); }
  // Sorted terms, and the held parameters (a law with --fix is equivalent to none but itself).
  std::string equivalence_key() const;
};

// Holds parameters at given values (e.g. the paper's published ones) for every
// name the model has; returns the names it applied.
std::vector<std::string> fix_parameters(Model& m, const std::vector<std::pair<std::string, double>>& values);

struct ModelOptions {
  bool phi_relative = false;  // Φ = γ·max(0,D−D_crit)/(W^μ·D_crit) instead of /W^μ
  bool T_varies = true;       // false: B/T^δ collapses to a constant (not identifiable)
  // false: the paper family's capacity term in the paper's coordinates A/N^alpha + constant
  // (as before Box-Cox; the tests compare the two)
  bool box_cox = true;
  // parameters --fix holds: a held A, B_T or E is a value in the paper's coordinates, so the
  // law is then fitted in them rather than in Box-Cox ones
  std::vector<std::string> held;
};

// (N^-alpha - 1)/alpha at ln N = lnN, smooth through alpha = 0 (-> -ln N); *d_alpha its
// derivative in alpha (when non-null), free of cancellation near alpha = 0.
double box_cox(double lnN, double alpha, double* d_alpha);

// The parameters of law `from` at p as a start for law `to`: shared names carried over, the
// capacity term converted between A/N^alpha + constant and the Box-Cox coordinates, the
// terms `to` has beyond `from` at 0. False when `to` cannot express `from` (not nested).
bool nested_start(const Model& from, const Eigen::VectorXd& p, const Model& to, Eigen::VectorXd& start);

// Every registered name, in display order, with its response and one-line description.
struct ModelInfo {
  std::string name, response, description;
  // fitted when no --model is given; the width-depth rivals (gemstones, inverse-depth) are
  // asked for by name or by fit-law sweep, so a study's default fit stays the paper's family
  bool by_default = true;
};
const std::vector<ModelInfo>& model_catalog();
// Throws Error for an unknown name.
Model make_model(const std::string& name, const ModelOptions& options);

}  // namespace shapelaw::fit
