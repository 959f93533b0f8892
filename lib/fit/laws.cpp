#include "fit/laws.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "util/error.h"

namespace shapelaw::fit {

namespace {

const std::vector<double> kExponentGrid = {0, 0.5, 1, 1.5, 2};  // Chinchilla's α, β grid
constexpr double kExpLo = -2, kExpHi = 5;
// the shared terms of the loss laws (Model::terms), bounds included
const char* const kCapacityTerm = "c*N^-t t[-2,5]";
const char* const kDataTerm = "c*T^-t t[-2,5]";

struct PaperSpec {
  bool phi = true, with_E = false, power = false, relative = false, T_varies = true;
  bool box_cox = true;  // the capacity term in Box-Cox coordinates where the law has a constant
};

Model paper_family(const std::string& name, const PaperSpec& s) {
  Model m;
  m.name = name;
  m.uses_T = true;
  m.has_phi = s.phi;
  m.uses_shape = s.phi;
  m.dcrit_form = s.phi ? (s.power ? "power" : "log") : "";
  // the function family, whatever the coordinates: Box-Cox's surface is A/N^alpha + constant
  // with its alpha -> 0 limit, so the law stays equivalent to kaplan-E and chinchilla
  m.terms.push_back(kCapacityTerm);
  if (s.T_varies) m.terms.push_back(kDataTerm);
  const bool has_constant = s.with_E || !s.T_varies;
  if (has_constant) m.terms.push_back("const");
  if (s.phi)
    m.terms.push_back(std::string("gamma>=0*max(0,D-") + (s.power ? "c[1e-6,1e4]*W^a[-2,3]" : "kappa[0,100]*ln W") +
                      ")/W^mu[0,5]" + (s.relative ? "/dcrit" : ""));
  // The paper's constant: B/T^delta at one T (B_T), or the irreducible loss E (which absorbs B_T).
  const std::string paper_constant = !has_constant ? "" : s.with_E ? "E" : "B_T";
  // Where there is a constant, its sum with A/N^alpha has a ridge A -> ±inf, constant -> ∓inf,
  // alpha -> 0 (the term becomes c - s*ln N) that LM crawls along in (A, constant, alpha):
  //   A/N^alpha + C = L1 + s*(N^-alpha - 1)/alpha,   s = A*alpha,   L1 = A + C,
  // smooth through alpha = 0 and across it (alpha < 0 needs A to pass through infinity).
  m.box_cox = has_constant && s.box_cox;
  std::string dc = s.power ? "c*W^a" : "kappa*ln W";
  std::string phi = s.relative ? "gamma*max(0, D - " + dc + ")/(W^mu*" + dc + ")"
                               : "gamma*max(0, D - " + dc + ")/W^mu";
  const std::string data_term = s.T_varies ? " + B/T^delta" : "";
  const std::string phi_term = s.phi ? " + " + phi : "";
  if (m.box_cox) {
    m.formula = "L = L1 + s*(N^-alpha - 1)/alpha" + data_term + phi_term + ", i.e. A/N^alpha + " + paper_constant +
                " with A = s/alpha, " + paper_constant + " = L1 - s/alpha (L1 - s*ln N at alpha = 0)";
  } else {
    m.formula = "L = A/N^alpha" + data_term + (s.with_E || s.T_varies ? "" : " + B_T") + phi_term + (s.with_E ? " + E" : "");
  }

  // linear coefficients: the capacity term's first, the constant in the paper's place
  m.lin_names.push_back(m.box_cox ? "s" : "A");
  int iB = -1, iG = -1, iC = -1;
  auto add_constant = [&] {
    iC = (int)m.lin_names.size();
    m.constant = m.box_cox ? "L1" : paper_constant;
    m.lin_names.push_back(m.constant);
  };
  if (s.T_varies) { iB = (int)m.lin_names.size(); m.lin_names.push_back("B"); }
  else if (!s.with_E) add_constant();
  if (s.phi) { iG = (int)m.lin_names.size(); m.lin_names.push_back("gamma"); }
  if (s.with_E) add_constant();
  if (!s.T_varies) {
    m.not_identifiable = {"B", "delta"};
    m.notes.push_back(s.with_E ? "tokens T do not vary: B/T^delta is absorbed into E"
                               : "tokens T do not vary: B/T^delta is fitted as one constant B_T");
  }
  if (m.box_cox) {
    m.notes.push_back("the capacity term is fitted as L1 + s*(N^-alpha - 1)/alpha (smooth through alpha = 0); A = s/alpha "
                      "and " + paper_constant + " = L1 - s/alpha are derived quantities");
    // alpha is the first nonlinear parameter: p = [s, ..., L1, ..., alpha, ...]
    const int iL = iC, ia = m.n_lin();
    m.derived.push_back({"A", [ia](const Eigen::VectorXd& p) { return capacity_A(p[0], p[ia]); }});
    m.derived.push_back(
        {paper_constant, [iL, ia](const Eigen::VectorXd& p) { return p[iL] - capacity_A(p[0], p[ia]); }});
  }
  // nonlinear parameters
  auto add_nl = [&](const std::string& n, double lo, double hi, std::vector<double> grid) {
    m.nl_names.push_back(n);
    m.nl_lo.push_back(lo);
    m.nl_hi.push_back(hi);
    m.nl_grid.push_back(std::move(grid));
    return (int)m.nl_names.size() - 1;
  };
  int tA = add_nl("alpha", kExpLo, kExpHi, kExponentGrid);
  int tD = s.T_varies ? add_nl("delta", kExpLo, kExpHi, kExponentGrid) : -1;
  int tM = -1, tK = -1, tC = -1, tPa = -1;
  if (s.phi) {
    // §3.4: wider models are more robust (mu >= 0); the penalty grows with excess depth (gamma >= 0)
    tM = add_nl("mu", 0, kExpHi, {0, 0.5, 1});
    if (s.power) {
      tC = add_nl("c", 1e-6, 1e4, {0.5, 2, 8});
      tPa = add_nl("a", -2, 3, {0.2, 0.45, 0.7});
    } else {
      tK = add_nl("kappa", 0, 100, {1, 1.5, 2, 2.5, 3, 4, 6});
    }
  }
  m.lin_lo.assign(m.lin_names.size(), -std::numeric_limits<double>::infinity());
  if (iG >= 0) m.lin_lo[iG] = 0;
  const int k = m.n_nl();
  const bool relative = s.relative, power = s.power, box_cox_term = m.box_cox;
  const int nlin = m.n_lin();
  m.basis = [=](const Point& x, const double* th, double* g, double* dg) {
    for (int j = 0; j < nlin * k; ++j) dg[j] = 0;
    double lnN = x.ln_N();
    if (box_cox_term) {
      g[0] = box_cox(lnN, th[tA], &dg[0 * k + tA]);
    } else {
      g[0] = std::exp(-th[tA] * lnN);
      dg[0 * k + tA] = -lnN * g[0];
    }
    if (iB >= 0) {
      double lnT = x.ln_T();
      g[iB] = std::exp(-th[tD] * lnT);
      dg[iB * k + tD] = -lnT * g[iB];
    }
    if (iC >= 0) g[iC] = 1;
    if (iG >= 0) {
      double lnW = x.ln_W();
      double wmu = std::exp(-th[tM] * lnW);  // W^-mu
      double dcrit, ddc_1 = 0, ddc_2 = 0;       // ∂dcrit/∂(kappa | c), ∂dcrit/∂a
      if (power) {
        double wa = std::exp(th[tPa] * lnW);
        dcrit = th[tC] * wa;
        ddc_1 = wa;
        ddc_2 = th[tC] * wa * lnW;
      } else {
        dcrit = th[tK] * lnW;
        ddc_1 = lnW;
      }
      double excess = x.D - dcrit;
      if (excess <= 0 || (relative && dcrit <= 0)) {
        g[iG] = 0;
      } else {
        double dgd;  // ∂g/∂dcrit
        if (relative) {
          g[iG] = excess / dcrit * wmu;
          dgd = -x.D / (dcrit * dcrit) * wmu;
        } else {
          g[iG] = excess * wmu;
          dgd = -wmu;
        }
        dg[iG * k + tM] = -lnW * g[iG];
        if (power) {
          dg[iG * k + tC] = dgd * ddc_1;
          dg[iG * k + tPa] = dgd * ddc_2;
        } else {
          dg[iG * k + tK] = dgd * ddc_1;
        }
      }
    }
  };
  return m;
}

Model chinchilla(bool T_varies) {
  Model m;
  m.name = "chinchilla";
  m.uses_T = true;
  m.formula = T_varies ? "L = E + A/N^alpha + B/T^beta" : "L = E + A/N^alpha";
  m.lin_names = T_varies ? std::vector<std::string>{"E", "A", "B"} : std::vector<std::string>{"E", "A"};
  m.nl_names = T_varies ? std::vector<std::string>{"alpha", "beta"} : std::vector<std::string>{"alpha"};
  m.nl_lo.assign(m.nl_names.size(), kExpLo);
  m.nl_hi.assign(m.nl_names.size(), kExpHi);
  m.nl_grid.assign(m.nl_names.size(), kExponentGrid);
  m.terms = {"const", kCapacityTerm};
  m.constant = "E";
  if (T_varies) m.terms.push_back(kDataTerm);
  if (!T_varies) {
    m.not_identifiable = {"B", "beta"};
    m.notes.push_back("tokens T do not vary: B/T^beta is absorbed into E");
  }
  const int k = m.n_nl();
  m.basis = [=](const Point& x, const double* th, double* g, double* dg) {
    for (int j = 0; j < (T_varies ? 3 : 2) * k; ++j) dg[j] = 0;
    g[0] = 1;
    double lnN = x.ln_N();
    g[1] = std::exp(-th[0] * lnN);
    dg[1 * k + 0] = -lnN * g[1];
    if (T_varies) {
      double lnT = x.ln_T();
      g[2] = std::exp(-th[1] * lnT);
      dg[2 * k + 1] = -lnT * g[2];
    }
  };
  return m;
}

Model kaplan(bool with_E) {
  Model m;
  m.name = with_E ? "kaplan-E" : "kaplan";
  m.formula = with_E ? "L = E + A/N^alpha" : "L = (N_c/N)^alpha_N = A/N^alpha, N_c = A^(1/alpha)";
  m.lin_names = with_E ? std::vector<std::string>{"E", "A"} : std::vector<std::string>{"A"};
  m.nl_names = {"alpha"};
  m.nl_lo = {kExpLo};
  m.nl_hi = {kExpHi};
  m.nl_grid = {kExponentGrid};
  m.terms = {kCapacityTerm};
  if (with_E) m.terms.push_back("const");
  if (with_E) m.constant = "E";
  if (!with_E) m.derived = {{"Nc", [](const Eigen::VectorXd& p) { return std::pow(p[0], 1.0 / p[1]); }}};
  m.basis = [=](const Point& x, const double* th, double* g, double* dg) {
    int iA = with_E ? 1 : 0;
    if (with_E) { g[0] = 1; dg[0] = 0; }
    double lnN = x.ln_N();
    g[iA] = std::exp(-th[0] * lnN);
    dg[iA] = -lnN * g[iA];
  };
  return m;
}

// Laws that give width and depth terms of their own beside N and T. Every term is a
// decaying power with a coefficient >= 0, so neither law can say that depth hurts: they are
// the rivals a law with Phi has to beat out of sample.
//   gemstones:     McLeish et al. 2025 (arXiv 2502.06857), approach 3 with width and depth,
//                  L = E + A/W^a + B/D^b + C/N^c + G/T^d (their depth_width.py, --num_parameters 4,
//                  coefficients exp(.) > 0); here A_W, B_D, C_N, B and a_W, b_D, c_N, beta.
//   inverse-depth: Liu et al. 2026 (arXiv 2602.05970), loss inversely proportional to depth
//                  past an offset: the depth term B_D/(D - D0)^b_D, with D0 <= 0.9 so that
//                  every depth >= 1 is past it.
Model width_depth_law(bool inverse_depth, bool T_varies) {
  Model m;
  m.name = inverse_depth ? "inverse-depth" : "gemstones";
  m.uses_T = true;
  m.uses_shape = true;
  const std::string depth_term = inverse_depth ? "B_D/(D - D0)^b_D" : "B_D/D^b_D";
  m.formula = "L = E + A_W/W^a_W + " + depth_term + " + C_N/N^c_N" + (T_varies ? " + B/T^beta" : "");
  m.lin_names = {"E", "A_W", "B_D", "C_N"};
  m.nl_names = {"a_W", "b_D", "c_N"};
  if (T_varies) {
    m.lin_names.push_back("B");
    m.nl_names.push_back("beta");
  } else {
    m.not_identifiable = {"B", "beta"};
    m.notes.push_back("tokens T do not vary: B/T^beta is absorbed into E");
  }
  if (inverse_depth) m.nl_names.push_back("D0");
  const int k = m.n_nl();
  m.nl_lo.assign(k, 0);  // decaying terms, as both references fit them
  m.nl_hi.assign(k, kExpHi);
  // Three starts per exponent, not Chinchilla's five: 4-5 exponents make 5^4 = 625 starts,
  // and on Gemstones' three published sweeps these 81 reach the same best optimum (objective
  // equal to 13 digits, docs/benchmarks.md) in a tenth of the time.
  m.nl_grid.assign(k, {0.25, 0.5, 1});
  const int tD0 = inverse_depth ? k - 1 : -1;
  if (inverse_depth) {
    m.nl_lo[tD0] = -20;
    m.nl_hi[tD0] = 0.9;
    m.nl_grid[tD0] = {0};
  }
  m.lin_lo.assign(m.lin_names.size(), 0);  // Gemstones fits every coefficient as exp(.)
  m.constant = "E";
  m.terms = {"const", "c>=0*W^-t t[0,5]", inverse_depth ? "c>=0*(D-D0)^-t t[0,5] D0[-20,0.9]" : "c>=0*D^-t t[0,5]",
             "c>=0*N^-t t[0,5]"};
  if (T_varies) m.terms.push_back("c>=0*T^-t t[0,5]");
  m.notes.push_back(inverse_depth
                        ? "inverse-depth: Liu et al. 2026 (arXiv 2602.05970), the depth term B_D/(D - D0)^b_D beside "
                          "width, N and T terms; no depth penalty can be expressed"
                        : "gemstones: McLeish et al. 2025 (arXiv 2502.06857) approach 3, width, depth, N and T terms; "
                          "no depth penalty can be expressed");
  const int nlin = m.n_lin();
  m.basis = [=](const Point& x, const double* th, double* g, double* dg) {
    for (int j = 0; j < nlin * k; ++j) dg[j] = 0;
    g[0] = 1;
    auto power = [&](int j, int t, double lnx) {
      g[j] = std::exp(-th[t] * lnx);
      dg[j * k + t] = -lnx * g[j];
    };
    power(1, 0, x.ln_W());
    if (inverse_depth) {
      const double shifted = x.D - th[tD0];
      power(2, 1, std::log(shifted));
      dg[2 * k + tD0] = th[1] / shifted * g[2];
    } else {
      power(2, 1, x.ln_D());
    }
    power(3, 2, x.ln_N());
    if (T_varies) power(4, 3, x.ln_T());
  };
  return m;
}

Model tau_model(bool power) {
  Model m;
  m.response = "tau";
  m.name = power ? "tau-power" : "tau-log";
  m.formula = power ? "tau = c*W^a" : "tau = c*ln W";
  m.uses_shape = true;
  m.terms = {power ? "tau c*W^t t[-2,5]" : "tau c*ln W"};
  m.lin_names = {"c"};
  if (power) {
    m.nl_names = {"a"};
    m.nl_lo = {kExpLo};
    m.nl_hi = {kExpHi};
    m.nl_grid = {kExponentGrid};
  }
  m.basis = [=](const Point& x, const double* th, double* g, double* dg) {
    double lnW = x.ln_W();
    if (power) {
      g[0] = std::exp(th[0] * lnW);
      dg[0] = lnW * g[0];
    } else {
      g[0] = lnW;
    }
  };
  return m;
}

}  // namespace

double box_cox(double lnN, double alpha, double* d_alpha) {
  // With u = -alpha*ln N: (N^-alpha - 1)/alpha = -ln N * h(u), h(u) = (e^u - 1)/u, and
  // d/dalpha = ln²N * h'(u), h'(u) = ((u - 1)e^u + 1)/u². Both closed forms cancel near u = 0
  // (h' loses ~eps/u² of its value), so h' comes from its series there: Σ_{k>=1} k u^(k-1)/(k+1)!.
  const double u = -alpha * lnN;
  const double h = u == 0 ? 1.0 : std::expm1(u) / u;
  if (d_alpha) {
    double dh;
    if (std::abs(u) < 0.1) {
      dh = 0;
      double term = 1;  // u^(k-1)/(k+1)!, from k = 1: 1/2
      for (int k = 1; k <= 12; ++k) {
        term = k == 1 ? 0.5 : term * u / (k + 1);
        dh += k * term;
      }
    } else {
      dh = ((u - 1) * std::exp(u) + 1) / (u * u);
    }
    *d_alpha = lnN * lnN * dh;
  }
  return -lnN * h;
}

bool nested_start(const Model& from, const Eigen::VectorXd& p, const Model& to, Eigen::VectorXd& start) {
  const auto names = from.param_names();
  std::map<std::string, double> v;
  for (size_t q = 0; q < names.size(); ++q) v[names[q]] = p[q];
  // the capacity term between A/N^alpha + C and L1 + s*(N^-alpha - 1)/alpha; a law without a
  // constant has C = 0 (the extra term at 0, the same function)
  if (from.box_cox != to.box_cox && v.count("alpha")) {
    const double alpha = v["alpha"];
    if (from.box_cox) {  // to the paper's coordinates: only where alpha is off the ridge
      if (to.constant.empty() || !(std::abs(alpha) > 0)) return false;
      const double A = capacity_A(v["s"], alpha);
      v[to.constant] = v["L1"] - A;
      v["A"] = A;
      v.erase("s");
      v.erase("L1");
    } else if (v.count("A")) {
      double C = 0;
      if (!from.constant.empty()) {
        C = v[from.constant];
        v.erase(from.constant);
      }
      v["s"] = capacity_slope(v["A"], alpha);
      v["L1"] = v["A"] + C;
      v.erase("A");
    }
  }
  start = Eigen::VectorXd::Zero(to.n_params());
  for (const auto& [name, value] : v) {
    const int q = to.index_of(name);
    if (q < 0) return false;
    start[q] = value;
  }
  return true;
}

std::vector<std::string> Model::param_names() const {
  std::vector<std::string> names = lin_names;
  names.insert(names.end(), nl_names.begin(), nl_names.end());
  return names;
}

int Model::index_of(const std::string& n) const {
  auto names = param_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == n) return (int)i;
  return -1;
}

double Model::predict(const Point& x, const Eigen::VectorXd& p) const {
  double g[16], dg[256];
  basis(x, p.data() + n_lin(), g, dg);
  double f = 0;
  for (int j = 0; j < n_lin(); ++j) f += p[j] * g[j];
  return f;
}

double Model::predict_grad(const Point& x, const Eigen::VectorXd& p, Eigen::VectorXd& grad) const {
  double g[16], dg[256];
  const int m = n_lin(), k = n_nl();
  basis(x, p.data() + m, g, dg);
  grad.setZero(m + k);
  double f = 0;
  for (int j = 0; j < m; ++j) {
    f += p[j] * g[j];
    grad[j] = g[j];
    for (int t = 0; t < k; ++t) grad[m + t] += p[j] * dg[j * k + t];
  }
  return f;
}

double Model::dcrit(double W, const Eigen::VectorXd& p) const {
  if (dcrit_form == "log") return p[index_of("kappa")] * std::log(W);
  if (dcrit_form == "power") return p[index_of("c")] * std::pow(W, p[index_of("a")]);
  return std::numeric_limits<double>::quiet_NaN();
}

std::string Model::equivalence_key() const {
  std::vector<std::string> sorted = terms;
  std::sort(sorted.begin(), sorted.end());
  std::string key = response;
  for (const auto& t : sorted) key += " + " + t;
  if (!fixed.empty()) key += " | fixed in " + name;  // held values make a law its own
  return key;
}

bool Model::is_fixed(int q) const {
  auto names = param_names();
  return std::find(fixed.begin(), fixed.end(), names[q]) != fixed.end();
}

std::vector<std::string> fix_parameters(Model& m, const std::vector<std::pair<std::string, double>>& values) {
  std::vector<std::string> applied;
  const double inf = std::numeric_limits<double>::infinity();
  if (m.lin_lo.empty()) m.lin_lo.assign(m.n_lin(), -inf);
  if (m.lin_hi.empty()) m.lin_hi.assign(m.n_lin(), inf);
  for (const auto& [name, v] : values) {
    for (int j = 0; j < m.n_lin(); ++j)
      if (m.lin_names[j] == name) { m.lin_lo[j] = m.lin_hi[j] = v; applied.push_back(name); }
    for (int t = 0; t < m.n_nl(); ++t)
      if (m.nl_names[t] == name) {
        m.nl_lo[t] = m.nl_hi[t] = v;
        m.nl_grid[t] = {v};
        applied.push_back(name);
      }
  }
  for (const auto& a : applied)  // --fix x=1 --fix x=2: the last value, one held parameter
    if (std::find(m.fixed.begin(), m.fixed.end(), a) == m.fixed.end()) m.fixed.push_back(a);
  return applied;
}

const std::vector<ModelInfo>& model_catalog() {
  static const std::vector<ModelInfo> catalog = {
      {"paper-log", "loss", "paper ansatz §3.4, D_crit = kappa*ln W"},
      {"paper-power", "loss", "paper ansatz §3.4, D_crit = c*W^a"},
      {"no-phi", "loss", "ablation: paper ansatz without the depth penalty Phi"},
      {"paper-log-E", "loss", "ablation: paper-log plus an irreducible loss E"},
      {"kaplan", "loss", "Kaplan 2020: L = (N_c/N)^alpha_N"},
      {"kaplan-E", "loss", "L = E + A/N^alpha"},
      {"chinchilla", "loss", "Chinchilla approach 3: L = E + A/N^alpha + B/T^beta"},
      {"gemstones", "loss",
       "McLeish et al. 2025, Gemstones (arXiv 2502.06857) approach 3: E + A/W^a + B/D^b + C/N^c + G/T^d", false},
      {"inverse-depth", "loss",
       "Liu et al. 2026, Inverse depth scaling (arXiv 2602.05970): E + A/W^a + B/(D-D0)^b + C/N^c + G/T^d", false},
      {"tau-power", "tau", "gradient persistence: tau = c*W^a (probe-grads table)"},
      {"tau-log", "tau", "gradient persistence: tau = c*ln W (probe-grads table)"},
  };
  return catalog;
}

Model make_model(const std::string& name, const ModelOptions& o) {
  PaperSpec s;
  s.relative = o.phi_relative;
  s.T_varies = o.T_varies;
  s.box_cox = o.box_cox;
  // a held A or constant is a value in the paper's coordinates: fit the law in them
  for (const char* paper : {"A", "B_T", "E"})
    if (std::find(o.held.begin(), o.held.end(), paper) != o.held.end()) s.box_cox = false;
  if (name == "paper-log") return paper_family(name, s);
  if (name == "paper-power") { s.power = true; return paper_family(name, s); }
  if (name == "no-phi") { s.phi = false; return paper_family(name, s); }
  if (name == "paper-log-E") { s.with_E = true; return paper_family(name, s); }
  if (name == "kaplan") return kaplan(false);
  if (name == "kaplan-E") return kaplan(true);
  if (name == "chinchilla") return chinchilla(o.T_varies);
  if (name == "gemstones") return width_depth_law(false, o.T_varies);
  if (name == "inverse-depth") return width_depth_law(true, o.T_varies);
  if (name == "tau-power") return tau_model(true);
  if (name == "tau-log") return tau_model(false);
  std::string all;
  for (const auto& m : model_catalog()) all += (all.empty() ? "" : ", ") + m.name;
  throw Error("unknown model '" + name + "' (known: " + all + ")");
}

}  // namespace shapelaw::fit
