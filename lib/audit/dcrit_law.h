#pragma once
// Critical-depth laws and the paper's loss ansatz
//   L = A/N^α + B/T^δ + Φ(D, W),  Φ = γ·max(0, D − D_crit(W)) / W^μ   ("absolute", default)
//                                 Φ = γ·max(0, D − D_crit(W)) / (D_crit·W^μ)  ("relative")
// with D_crit(W) = κ·ln W ("log") or c·W^a ("power").
//
// Built-in laws (`--law NAME`):
//   paper-log      κ = 2.43 (Table 1; used by Tables 4 and 8)            [default]
//   paper-tau      c = 2.06, a = 0.44 (τ(W) of §4.7, D_crit ≈ τ per Hypothesis C.0.18)
//   paper-table10  c fitted to Table 10's D_crit column at a = 0.44 (least squares)
//   log:K, power:C,A   any constants
// Paper laws take γ = 0.18, μ = 0.35 (Table 1) for Φ; A is not published, so their
// predicted loss difference covers Φ (and a capacity term only when A is known).
// Intervals for paper laws come from Table 1's marginal 95% CIs, drawn as independent
// normals (an approximation: the paper gives no covariances); for a fit record they come
// from its bootstrap_draws.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace shapelaw::audit {

struct LawParams {
  enum class Form { log, power } form = Form::log;
  double kappa = 0, c = 0, a = 0;
  bool has_phi = false;
  double gamma = 0, mu = 0;
  bool phi_relative = false;
  bool has_capacity = false;  // A and α known
  double A = 0, alpha = 0;
};

double dcrit(const LawParams& p, double width);
double phi(const LawParams& p, double depth, double width);
// L(D2, W2, N2) − L(D1, W1, N1) at equal tokens; NaN when the law has no Φ.
double delta_loss(const LawParams& p, double d1, double w1, double n1, double d2, double w2, double n2);

struct Interval {
  double lo = 0, hi = 0;
};

// The data a fitted law was fitted on (fit.json input.range): audit marks every model
// outside it as an extrapolation of the law, and by how far.
struct DataRange {
  std::optional<Interval> N, T, D, W;
};

struct Law {
  std::string name;         // "paper-log", "fit.json:paper-log", ...
  std::string description;  // human formula with constants
  std::string ci_label;     // where intervals come from ("" when none)
  std::string loss_note;    // what the predicted loss difference covers
  std::string n_source = "12dw2";  // N of the capacity term: 12dw2, nonembedding (or auto), total
  LawParams point;
  std::vector<LawParams> draws;
  std::optional<DataRange> range;  // a fit record's; none for the paper's laws
  // Why the law's loss predictions are refused ("" when they are not): a capacity term with a
  // non-positive coefficient (A ≤ 0) predicts that loss falls as the model shrinks.
  std::string loss_refused;
};

std::vector<std::string> builtin_law_names();
// paper-log, paper-tau, paper-table10, log:K, power:C,A; throws Error for anything else.
Law builtin_law(const std::string& spec);
// Least-squares c for D = c·W^a through (width, dcrit) points.
double fit_power_c(const std::vector<std::pair<double, double>>& points, double a);

// 2.5 / 97.5 percentiles of f over the law's draws (non-finite values skipped); nullopt
// without draws.
std::optional<Interval> draw_interval(const Law& law, const std::function<double(const LawParams&)>& f);
std::string describe(const LawParams& p);  // "2.43·ln W" or "2.06·W^0.44"

}  // namespace shapelaw::audit
