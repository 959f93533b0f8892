#include "fit/analysis.h"
#include "fit/loo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <functional>
#include <map>
#include <set>

#include "fit/identification.h"
#include "fit/parallel.h"
#include "fit/profile.h"
#include "fit/replicates.h"
#include "fit/resample.h"
#include "fit/selection.h"
#include "fit/stats.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace shapelaw::fit {

using Eigen::VectorXd;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json interval(double lo, double hi) { return json::array({num(lo), num(hi)}); }

// shapes false (the data has no depth and width): N* and T* only
json optimal_json(const OptimalCurve& c, bool shapes) {
  json j;
  j["available"] = c.available;
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.available) return j;
  j["shapes"] = shapes;
  if (shapes) j["shape_unique"] = c.shape_unique;
  j["n_interior"] = c.n_interior;
  j["slopes"] = {{"N", num(c.slope_N)}, {"T", num(c.slope_T)}};
  if (shapes)
    j["slopes"].update({{"D_deepest", num(c.slope_D_hi)}, {"W_at_D_deepest", num(c.slope_W_at_D_hi)},
                        {"D_shallowest", num(c.slope_D_lo)}, {"W_at_D_shallowest", num(c.slope_W_at_D_lo)}});
  json pts = json::array();
  for (const auto& p : c.points) {
    json q = {{"C", p.C}, {"L", num(p.L)}, {"N", p.N}, {"T", p.T}, {"boundary", p.boundary}};
    if (shapes)
      q.update({{"D_shallowest", p.D_lo}, {"D_deepest", p.D_hi}, {"W_at_D_shallowest", p.W_at_D_lo},
                {"W_at_D_deepest", p.W_at_D_hi}});
    pts.push_back(q);
  }
  j["points"] = pts;
  return j;
}

// ---- the data, before any law --------------------------------------------------------

}  // namespace

bool runs_repeat(const std::vector<Row>& rows) {
  if (std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.group.empty(); })) return false;
  std::set<std::string> seen;
  for (const auto& r : rows)
    if (!r.run.empty() && !seen.insert(r.run).second) return true;
  return false;
}

namespace {

PreparedData prepare_data(std::vector<Row>& rows, const LawOptions& opt) {
  PreparedData d;
  const size_t n = rows.size();
  d.points.resize(n);
  d.groups.resize(n);
  std::map<std::string, int> group_ids;
  // Rows that share a run are checkpoints of one training run (one initialisation, one data
  // order, one schedule), not independent measurements: without explicit groups, bootstrap
  // and leave-one-out resample whole runs. A probe-grads table's steps of one run likewise.
  const bool explicit_groups = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.group.empty(); });
  if (opt.tau || runs_repeat(rows))
    for (auto& r : rows)
      if (r.group.empty()) r.group = r.run;
  d.have_groups = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.group.empty(); });
  d.resample_unit = !d.have_groups ? "row" : explicit_groups ? "group" : "run";
  for (size_t i = 0; i < n; ++i) {
    const Row& r = rows[i];
    Point& p = d.points[i];
    p.D = r.depth;
    p.W = r.width;
    p.N = r.N;
    p.T = r.T;
    p.y = r.loss;
    p.cache_logs();
    std::string key = d.have_groups && !r.group.empty() ? "g:" + r.group : "row:" + std::to_string(i);
    d.groups[i] = group_ids.emplace(key, (int)group_ids.size()).first->second;
  }
  d.n_groups = group_ids.size();
  if (opt.weights_se) {
    double mean = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!(rows[i].loss_se > 0))
        throw Error(located(rows[i].source, rows[i].line, "--weights se: row has no positive loss_se"));
      double s = opt.fit.log_space ? rows[i].loss_se / rows[i].loss : rows[i].loss_se;
      d.points[i].weight = 1.0 / (s * s);
      mean += d.points[i].weight;
    }
    mean /= n;
    for (auto& p : d.points) p.weight /= mean;
  }
  d.T_known = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.T > 0; });
  if (!opt.tau) {
    if (d.T_known == 0) {
      d.T_note = "no tokens (or compute) column: the data term is not identifiable";
    } else if (d.T_known < n) {
      for (const auto& r : rows)
        if (!(r.T > 0))
          throw Error(located(r.source, r.line, "tokens unknown for this row but known for others; "
                                                "give tokens (or compute) for every row, e.g. --col tokens=COLUMN"));
    } else {
      double tmin = 1e300, tmax = 0;
      for (const auto& r : rows) { tmin = std::min(tmin, r.T); tmax = std::max(tmax, r.T); }
      d.T_varies = tmax > tmin * (1 + 1e-9);
      if (!d.T_varies) d.T_note = "tokens T are the same for every row: the data term is not identifiable";
    }
  }
  auto varies = [&](auto get) {
    double lo = 1e300, hi = -1e300;
    for (const auto& r : rows) { lo = std::min(lo, get(r)); hi = std::max(hi, get(r)); }
    return hi > lo;
  };
  d.shapes = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.depth > 0 && r.width > 0; });
  d.D_varies = varies([](const Row& r) { return r.depth; });
  d.W_varies = varies([](const Row& r) { return r.width; });
  d.N_varies = varies([](const Row& r) { return r.N; });
  // replicates (e.g. seeds): the noise floor every law is tested against. Not for τ tables:
  // there the rows of one configuration are steps of one run, not independent replicates.
  if (!opt.tau) d.pure_error = pure_error(d.points, opt.fit.log_space);
  return d;
}

json options_json(const LawOptions& opt, const FitInput& in, const PreparedData& d) {
  json o = {{"objective", opt.fit.objective.kind == Objective::Huber ? "huber" : "ls"},
          {"huber_delta", opt.fit.objective.delta},
          {"space", opt.fit.log_space ? "log" : "loss"},
          {"phi", opt.phi_relative ? "relative" : "absolute"},
          {"bootstrap", opt.bootstrap},
          {"bootstrap_by_group", d.have_groups},
          // what the bootstrap resamples and leave-one-out leaves out: whole runs (rows sharing
          // a run are checkpoints of one run), the --col group groups, or single rows
          {"resample_unit", d.resample_unit},
          {"holdout", opt.holdout},
          {"loo", opt.loo},
          {"profile", opt.profile},
          {"n_source", opt.n_source},
          {"n_resolved", in.n.source},
          {"n_note", in.n.reason},
          {"weights", opt.weights_se ? "se" : "none"},
          {"response", opt.tau ? "tau" : "loss"},
          {"select", opt.select},
          {"grids", [&] { json g = json::object(); for (auto& [k, v] : opt.grids) g[k] = v; return g; }()},
          {"fixed", [&] { json f = json::object(); for (auto& [k, v] : opt.fixed) f[k] = v; return f; }()},
          {"threads", opt.fit.threads > 0 ? opt.fit.threads : default_threads()},
          {"lm", {{"max_iterations", opt.fit.lm.max_iterations}, {"ftol", opt.fit.lm.ftol},
                  {"xtol", opt.fit.lm.xtol}, {"gtol", opt.fit.lm.gtol}}},
          {"compute_optimal", {{"c_min", opt.optimal.c_min}, {"c_max", opt.optimal.c_max},
                               {"n_c", opt.optimal.n_c}, {"draws", opt.optimal_draws}}}};
  if (opt.fit.resample_starts > 0) o["resample_starts"] = opt.fit.resample_starts;
  return o;
}

json input_json(const std::vector<Row>& rows, const std::vector<std::string>& files,
                const std::vector<std::string>& warnings, const PreparedData& d) {
  std::set<std::string> tokenizers;
  json tokenizer_kinds = json::object();  // hash -> kind, where the rows name it
  for (const auto& r : rows) {
    if (!r.tokenizer.empty()) tokenizers.insert(r.tokenizer);
    if (!r.tokenizer.empty() && !r.tokenizer_kind.empty()) tokenizer_kinds[r.tokenizer] = r.tokenizer_kind;
  }
  json input = {{"files", files}, {"rows", rows.size()}, {"groups", d.n_groups}, {"warnings", warnings},
                {"tokenizers", tokenizers}, {"tokenizer_kinds", tokenizer_kinds}, {"tokens_vary", d.T_varies}};
  if (!d.T_note.empty()) input["tokens_note"] = d.T_note;
  // the data's range: audit marks what lies outside it as an extrapolation of the law
  auto range = [&](auto get) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& r : rows) { lo = std::min(lo, get(r)); hi = std::max(hi, get(r)); }
    return interval(lo, hi);
  };
  json data_range = {{"N", range([](const Row& r) { return r.N; })}};
  if (d.T_known == rows.size()) data_range["T"] = range([](const Row& r) { return r.T; });
  if (d.shapes) {
    data_range["D"] = range([](const Row& r) { return r.depth; });
    data_range["W"] = range([](const Row& r) { return r.width; });
  }
  input["range"] = data_range;
  input["shapes"] = d.shapes;
  return input;
}

json replicates_json(const PureError& pe, const std::vector<Row>& rows) {
  json rj = {{"configurations", pe.configurations}, {"rows", pe.rows}, {"df", pe.df},
             {"ss_fit_space", pe.ss}, {"sd_fit_space", pe.sd_fit_space}, {"sd", pe.sd_response}};
  // the runs' own standard errors (of a mean over steps) against the spread between replicates
  std::vector<double> ses;
  for (const auto& r : rows)
    if (r.loss_se > 0) ses.push_back(r.loss_se);
  if (!ses.empty()) {
    const double median_se = percentile(ses, 0.5);
    rj["median_row_se"] = median_se;
    rj["sd_over_median_row_se"] = num(pe.sd_response / median_se);
  }
  return rj;
}

// ---- fitting each law, nested laws first ------------------------------------------------

// The laws as fitted here: the registry's, with --grid and --fix applied, each fitted once.
// A law that contains another (kaplan ⊂ no-phi ⊂ paper-log, kaplan-E ⊂ chinchilla,
// fit/laws.h nested_start: by name, the capacity term carried into Box-Cox coordinates)
// starts also from that law's optimum, its own extra linear terms at 0 (the same function)
// and its extra nonlinear parameters at each grid value. Multi-start grids alone can miss
// the nested law's basin (in the paper's coordinates no-phi then crawled along A → −∞,
// α → 0⁻, B_T → +∞ to an objective worse than kaplan's); the likelihood ratio against it is
// then inflated.
class LawFitter {
 public:
  LawFitter(const std::vector<std::string>& names, const ModelOptions& mo, const LawOptions& opt,
            const PreparedData& d)
      : names_(names), mo_(mo), opt_(opt), d_(d) {}

  // The law, and why it cannot be fitted to this data ("" if it can).
  Model prepare(const std::string& name, std::string& why, const ModelOptions& options) const {
    Model m = make_model(name, options);
    for (const auto& [gname, values] : opt_.grids)
      for (int t = 0; t < m.n_nl(); ++t)
        if (m.nl_names[t] == gname) m.nl_grid[t] = values;
    fix_parameters(m, opt_.fixed);
    why.clear();
    if (m.uses_shape && !d_.shapes) why = "needs depth and width; the rows have none";
    else if (m.has_phi && !d_.D_varies) why = "depth does not vary: the depth penalty is not identifiable";
    else if (m.has_phi && !d_.W_varies) why = "width does not vary: D_crit(W) and mu are not identifiable";
    else if (m.response == "loss" && !d_.N_varies) why = "N does not vary: the capacity term is not identifiable";
    else if (m.response == "tau" && !d_.W_varies) why = "width does not vary";
    else if (d_.points.size() <= (size_t)m.n_free())
      why = std::to_string(d_.points.size()) + " rows for " + std::to_string(m.n_params()) + " parameters";
    return m;
  }
  Model prepare(const std::string& name, std::string& why) const { return prepare(name, why, mo_); }

  const FitResult& fit(const std::string& name, const Model& m) {
    if (auto it = fits_.find(name); it != fits_.end()) return it->second;
    std::vector<Eigen::VectorXd> extra = nested_starts(name, m);
    // Φ's max(0, ·) and the Huber loss put kinks in the surface, and the starts end in different
    // places in either coordinates (on the micro study ~90 distinct optima of 105 starts, 1e-3
    // apart): the same law fitted in the paper's coordinates from the same starts, its best optima
    // carried over, keeps the Box-Cox fit never worse than that one (a held s or L1 has no twin).
    const bool slope_held =
        std::any_of(m.fixed.begin(), m.fixed.end(), [](const std::string& q) { return q == "s" || q == "L1"; });
    if (m.box_cox && !slope_held) {
      ModelOptions paper = mo_;
      paper.box_cox = false;
      std::string why_twin;
      const Model twin = prepare(name, why_twin, paper);
      std::vector<Eigen::VectorXd> twin_extra;  // the nested laws' starts, in the twin's coordinates
      for (const auto& e : extra) {
        Eigen::VectorXd t;
        if (nested_start(m, e, twin, t)) twin_extra.push_back(t);
      }
      const FitResult tf = fit_multistart(twin, d_.points, opt_.fit, twin_extra);
      for (const auto& q : tf.optima_params) {
        Eigen::VectorXd start;
        if (nested_start(twin, q, m, start)) extra.push_back(start);
      }
    }
    return fits_.emplace(name, fit_multistart(m, d_.points, opt_.fit, extra)).first->second;
  }

 private:
  // Starts of m from the optimum of every smaller law it can express, each extra nonlinear
  // parameter at its grid values (at most 64 combinations per nested law, in grid order).
  std::vector<Eigen::VectorXd> nested_starts(const std::string& name, const Model& m) {
    std::vector<Eigen::VectorXd> extra;
    for (const auto& other : names_) {
      if (other == name) continue;
      std::string why_other;
      Model o = prepare(other, why_other);
      if (!why_other.empty() || o.response != m.response || o.n_params() >= m.n_params()) continue;
      Eigen::VectorXd probe;  // whether m can express o at all, before fitting o
      if (!nested_start(o, Eigen::VectorXd::Ones(o.n_params()), m, probe)) continue;
      const FitResult& inner = fit(other, o);
      if (!std::isfinite(inner.objective)) continue;
      std::vector<Eigen::VectorXd> partial(1);
      if (!nested_start(o, inner.p, m, partial[0])) continue;  // (alpha exactly 0: no paper coordinates)
      for (int t = 0; t < m.n_nl(); ++t) {
        if (o.index_of(m.nl_names[t]) >= 0) continue;
        std::vector<Eigen::VectorXd> next;
        for (const auto& v : partial)
          for (double g : m.nl_grid[t])
            if (next.size() < 64) {
              next.push_back(v);
              next.back()[m.n_lin() + t] = g;
            }
        partial = std::move(next);
      }
      extra.insert(extra.end(), partial.begin(), partial.end());
    }
    return extra;
  }

  const std::vector<std::string>& names_;
  const ModelOptions& mo_;
  const LawOptions& opt_;
  const PreparedData& d_;
  std::map<std::string, FitResult> fits_;
};

// ---- one law's analysis: numbers only --------------------------------------------------

LawAnalysis analyse_law(const Model& m, const FitResult& fr, const PreparedData& d, const LawOptions& opt) {
  const std::vector<Point>& pts = d.points;
  const size_t n = pts.size();
  LawAnalysis a;
  a.model = m;
  a.fit = fr;
  a.identification = identify(m, pts, fr, opt.fit);
  const int P = m.n_params();
  // a law with every parameter held is evaluated, not fitted: resampling would return the
  // held values B times, so it has no bootstrap and no CIs (LOO and the extrapolation check
  // still run: they evaluate it out of sample, which is the same evaluation)
  a.evaluated = m.n_free() == 0;
  if (opt.bootstrap > 0 && !a.evaluated) a.bootstrap = bootstrap(m, pts, d.groups, fr, opt.fit, opt.bootstrap, opt.seed);
  a.loo_done = opt.loo;
  if (opt.loo) a.loo = leave_one_out(m, pts, d.groups, fr, opt.fit, size_t(opt.loo_max_groups), opt.seed, m.name);
  if (opt.holdout > 0) a.extrapolation = extrapolate(m, pts, opt.fit, opt.holdout);
  // profile-likelihood intervals of the nonlinear parameters, in parallel
  a.profiles.resize(P);
  if (opt.profile) {
    std::vector<int> which;
    for (int q = m.n_lin(); q < P; ++q)
      if (!m.is_fixed(q)) which.push_back(q);
    parallel_for(which.size(), opt.fit.threads,
                 [&](size_t w) { a.profiles[which[w]] = profile_interval(m, pts, fr, which[w], opt.fit); });
  }
  a.observed.resize(n);
  a.predicted.resize(n);
  for (size_t i = 0; i < n; ++i) {
    a.observed[i] = pts[i].y;
    a.predicted[i] = m.predict(pts[i], fr.p);
  }
  a.metrics = compute_metrics(a.observed, a.predicted, fr.residuals.squaredNorm(), fr.objective, m.n_free());
  if (d.pure_error.df > 0) {
    // a parameter pinned at a bound gives the law no freedom: it does not use up a degree
    // of freedom of the lack of fit (counting it would make the test anti-conservative)
    for (int q = 0; q < P; ++q) a.params_at_bound += fr.at_bound[q] && !m.is_fixed(q);
    a.lack_of_fit_done = true;
    a.lack_of_fit = lack_of_fit(a.metrics.rss, a.metrics.n, a.metrics.k - a.params_at_bound, d.pure_error);
  }
  a.extrapolation_predicted.assign(n, kNaN);
  if (a.extrapolation.done)
    for (size_t q = 0; q < a.extrapolation.test_index.size(); ++q)
      a.extrapolation_predicted[a.extrapolation.test_index[q]] = a.extrapolation.predicted[q];

  auto over_draws = [&](auto f) {
    std::vector<double> v;
    for (const auto& draw : a.bootstrap.draws) v.push_back(f(draw));
    return spread(v);
  };
  if (!m.dcrit_form.empty()) {
    for (double W : opt.dcrit_widths)
      a.dcrit_at.push_back({W, m.dcrit(W, fr.p), over_draws([&](const VectorXd& p) { return m.dcrit(W, p); })});
    // rows sitting exactly on the kink of max(0, D − D_crit(W)): the objective is not
    // differentiable there, so Jacobian CIs of the D_crit parameters are not valid
    for (size_t i = 0; i < n; ++i)
      if (std::abs(pts[i].D - m.dcrit(pts[i].W, fr.p)) <= 1e-6 * pts[i].D) a.on_kink.push_back(i);
  }
  for (const auto& [dname, fn] : m.derived)  // the law's own derived quantities (e.g. kaplan's N_c)
    a.derived.push_back({dname, fn(fr.p), over_draws(fn)});
  // the paper's A and constant exist only off the ridge: near alpha = 0 they are ±1/alpha
  // large and cancel, and only s, L1 and alpha describe the fitted surface
  if (m.box_cox) a.alpha_near_zero = !(std::abs(fr.p[m.index_of("alpha")]) > kFlatAlpha);
  if (m.response == "loss") {
    a.has_optimal = true;
    OptimalOptions optimal = opt.optimal;
    optimal.shapes = d.shapes;
    a.optimal = compute_optimal(m, fr.p, optimal);
    if (a.optimal.available && opt.optimal_draws > 0 && !a.bootstrap.draws.empty()) {
      a.optimal_draws.resize(std::min<size_t>(opt.optimal_draws, a.bootstrap.draws.size()));
      parallel_for(a.optimal_draws.size(), opt.fit.threads,
                   [&](size_t b) { a.optimal_draws[b] = compute_optimal(m, a.bootstrap.draws[b], optimal); });
    }
  }
  return a;
}

}  // namespace

Spread spread(const std::vector<double>& v) {
  Spread p;
  p.lo = percentile(v, 0.025);
  p.hi = percentile(v, 0.975);
  double m = 0, n = 0;
  for (double x : v)
    if (std::isfinite(x)) { m += x; ++n; }
  if (n > 1) {
    m /= n;
    double s = 0;
    for (double x : v)
      if (std::isfinite(x)) s += (x - m) * (x - m);
    p.sd = std::sqrt(s / (n - 1));
  }
  return p;
}

std::string LawAnalysis::convergence_warning() const {
  if (fit.converged) return "";
  return model.name + ": the best of " + std::to_string(fit.n_starts) + " starts did not converge (" + fit.status +
         " after " + std::to_string(fit.iterations) + " iterations; " + std::to_string(fit.n_converged) +
         " starts converged): its tests and its place in the selection are not to be trusted (raise --max-iterations)";
}

// ---- one law's record: JSON only -------------------------------------------------------

json law_json(const LawAnalysis& a, const PreparedData& d, const std::vector<Row>& rows, const LawOptions& opt) {
  const Model& m = a.model;
  const FitResult& fr = a.fit;
  const Identification& ident = a.identification;
  const int P = m.n_params();
  const size_t n = rows.size();
  const auto pnames = m.param_names();
  json mj;
  mj["name"] = m.name;
  mj["formula"] = m.formula;
  mj["response"] = m.response;
  mj["param_names"] = pnames;
  json params = json::object();
  const double tq = t975((double)n - m.n_free());
  for (int q = 0; q < P; ++q) {
    std::vector<double> v;
    for (const auto& draw : a.bootstrap.draws) v.push_back(draw[q]);
    const Spread pc = spread(v);
    const double est = fr.p[q], se = fr.se[q];
    json pj = {{"estimate", est},
               {"se", num(se)},
               {"ci95_jacobian", interval(est - tq * se, est + tq * se)},
               {"ci95_bootstrap", interval(pc.lo, pc.hi)},
               {"bootstrap_se", num(pc.sd)},
               {"at_bound", (bool)fr.at_bound[q]},
               {"fixed", m.is_fixed(q)},
               {"linear", q < m.n_lin()}};
    // a constant may be any sign (L1 is the loss at N = 1, E may be fitted below 0)
    if (q < m.n_lin() && est <= 0 && m.lin_names[q] != "E" && m.lin_names[q] != "L1") pj["non_positive"] = true;
    const ProfileInterval& pr = a.profiles[q];
    if (pr.computed) {
      pj["ci95_profile"] = interval(pr.lo, pr.hi);
      if (pr.lo_at_bound || pr.hi_at_bound) pj["ci95_profile_open"] = json::array({pr.lo_at_bound, pr.hi_at_bound});
    }
    params[pnames[q]] = pj;
  }
  mj["params"] = params;
  mj["not_identifiable"] = m.not_identifiable;
  std::vector<std::string> weak = fr.weakly_identified;
  for (const auto& w : ident.not_identified)
    if (std::find(weak.begin(), weak.end(), w) == weak.end()) weak.push_back(w);
  mj["weakly_identified"] = weak;
  json ranges = json::object();
  for (const auto& r : ident.ranges) ranges[r.name] = interval(r.lo, r.hi);
  mj["identification"] = {{"status", ident.identified() ? "identified" : "weakly_identified"},
                          {"tolerance", ident.tolerance},
                          {"solutions_within_tolerance", ident.solutions_within},
                          {"not_identified", ident.not_identified},
                          {"ranges", ranges}};
  json notes = m.notes;
  if (a.evaluated)
    notes.push_back("evaluated, not fitted: every parameter is held with --fix (objective and metrics at "
                    "the held values; no confidence intervals, no bootstrap)");
  if (!ident.identified()) notes.push_back(ident.message());
  if (!fr.converged) notes.push_back(a.convergence_warning());
  json cov = json::array();
  for (int r = 0; r < P; ++r) {
    json row = json::array();
    for (int c = 0; c < P; ++c) row.push_back(num(fr.cov(r, c)));
    cov.push_back(row);
  }
  mj["covariance"] = cov;
  json optima = json::array();
  for (auto& [obj, count] : fr.optima) optima.push_back({{"objective", obj}, {"starts", count}});
  mj["fit"] = {{"objective", fr.objective},         {"converged", fr.converged},
               {"status", fr.status},               {"iterations", fr.iterations},
               {"starts", fr.n_starts},             {"total_iterations", fr.total_iterations},
               {"converged_starts", fr.n_converged}, {"starts_at_best", fr.n_at_best},
               {"distinct_optima", fr.n_distinct_optima}, {"optima", optima},
               {"condition_number", num(fr.condition)}};
  const BootstrapResult& boot = a.bootstrap;
  mj["bootstrap"] = {{"requested", boot.requested}, {"used", boot.draws.size()}, {"failed", boot.failed},
                     {"not_converged", boot.not_converged}, {"by_group", d.have_groups},
                     {"unit", d.resample_unit}};
  if (a.evaluated && opt.bootstrap > 0) mj["bootstrap"]["reason"] = "every parameter is held: nothing to resample";
  mj["evaluated"] = a.evaluated;
  json draws = json::array();
  for (const auto& draw : boot.draws) {
    json row = json::array();
    for (int q = 0; q < P; ++q) row.push_back(draw[q]);
    draws.push_back(row);
  }
  mj["bootstrap_draws"] = draws;

  const Metrics& met = a.metrics;
  json metrics = {{"n", met.n}, {"k", met.k}, {"objective", met.objective}, {"rss_fit_space", met.rss},
                  {"r2", num(met.r2)}, {"rmse", num(met.rmse)}, {"aic", num(met.aic)},
                  {"aicc", num(met.aicc)}, {"bic", num(met.bic)}};
  if (a.loo_done) a.loo.add_metrics(a.observed, metrics, notes);
  mj["metrics"] = metrics;
  if (a.lack_of_fit_done) {
    const LackOfFit& lof = a.lack_of_fit;
    mj["lack_of_fit"] = lof.computed ? json{{"f", lof.f}, {"df_lof", lof.df_lof}, {"df_pe", lof.df_pe},
                                             {"ss_lof", lof.ss_lof}, {"p_value", lof.p_value},
                                             {"params_at_bound", a.params_at_bound}}
                                     : json{{"reason", lof.reason}};
  }
  const Extrapolation& ex = a.extrapolation;
  if (ex.done) {
    json held = json::array();
    for (int i : ex.test_index) held.push_back(rows[i].run);
    mj["extrapolation"] = {{"by", m.response == "tau" ? "width" : "N"}, {"n_train", ex.n_train},
                           {"n_test", ex.n_test}, {"threshold", ex.n_threshold}, {"rmse", ex.rmse},
                           {"mean_error", ex.mean_error}, {"max_abs_error", ex.max_abs_error},
                           {"held_out", held}};
  } else if (opt.holdout > 0) {
    mj["extrapolation"] = {{"reason", ex.reason}};
  }

  json derived = json::object();
  if (!m.dcrit_form.empty()) {
    json dc = {{"form", m.dcrit_form}};
    if (m.dcrit_form == "log") dc["kappa"] = fr.p[m.index_of("kappa")];
    else { dc["c"] = fr.p[m.index_of("c")]; dc["a"] = fr.p[m.index_of("a")]; }
    dc["phi"] = opt.phi_relative ? "relative" : "absolute";
    json at = json::array();
    for (const auto& w : a.dcrit_at)
      at.push_back({{"width", w.width}, {"estimate", w.estimate}, {"ci95_bootstrap", interval(w.ci.lo, w.ci.hi)}});
    dc["at_widths"] = at;
    if (!a.on_kink.empty()) {
      json kinks = json::array();
      for (size_t i : a.on_kink) kinks.push_back(rows[i].run);
      dc["on_kink"] = kinks;
      notes.push_back("the optimum puts D_crit(W) exactly on the depth of run(s) " + kinks.dump() +
                      " (the kink of max(0, D - D_crit)): Jacobian CIs of the D_crit parameters are not "
                      "valid there; use the bootstrap CIs");
    }
    mj["dcrit"] = dc;
  }
  for (const auto& v : a.derived)
    derived[v.name] = {{"estimate", num(v.estimate)}, {"ci95_bootstrap", interval(v.ci.lo, v.ci.hi)}};
  if (m.box_cox) {
    const double alpha = fr.p[m.index_of("alpha")];
    const std::string paper_constant = m.derived.back().first;  // (laws.cpp: A, then the constant)
    for (const std::string& dname : {std::string("A"), paper_constant}) derived[dname]["alpha_near_zero"] = a.alpha_near_zero;
    if (a.alpha_near_zero)
      notes.push_back(m.name + ": alpha = " + std::to_string(alpha) + " (|alpha| <= " + std::to_string(kFlatAlpha) +
                      "): the capacity term is L1 - s*ln N to first order; A = s/alpha and " + paper_constant +
                      " = L1 - s/alpha are not estimates (derived.A.alpha_near_zero)");
  }
  if (a.has_optimal) {
    json oj = optimal_json(a.optimal, d.shapes);
    if (!a.optimal_draws.empty()) {
      json ci = json::object();
      auto add = [&](const char* key, double OptimalCurve::*f) {
        std::vector<double> v;
        for (const auto& c : a.optimal_draws) v.push_back(c.*f);
        const Spread pc = spread(v);
        int finite = std::count_if(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
        ci[key] = {{"ci95_bootstrap", interval(pc.lo, pc.hi)}, {"draws_with_interior_optimum", finite}};
      };
      add("N", &OptimalCurve::slope_N);
      add("T", &OptimalCurve::slope_T);
      if (d.shapes) {
        add("D_deepest", &OptimalCurve::slope_D_hi);
        add("W_at_D_deepest", &OptimalCurve::slope_W_at_D_hi);
        add("D_shallowest", &OptimalCurve::slope_D_lo);
        add("W_at_D_shallowest", &OptimalCurve::slope_W_at_D_lo);
      }
      oj["slopes_bootstrap"] = ci;
      oj["draws"] = a.optimal_draws.size();
    }
    derived["compute_optimal"] = oj;
  }
  mj["derived"] = derived;
  mj["notes"] = notes;
  mj["seconds"] = a.seconds;
  return mj;
}

// ---- the analysis ---------------------------------------------------------------------

LawOutput run_fit_law(FitInput in, const LawOptions& opt) {
  LawOutput out;
  json& rec = out.record;
  const std::string response = opt.tau ? "tau" : "loss";
  std::vector<Row>& rows = in.rows;
  canonical_order(rows);
  std::vector<std::string> files = in.files;
  std::sort(files.begin(), files.end());

  // input hash: the bytes of every input file, in sorted order
  Sha256 hash;
  for (const auto& f : files) hash.update(read_file(f));
  rec["format"] = "shapelaw.fit";
  rec["version"] = 1;
  rec["input_sha256"] = hash.hex_digest();
  rec["seed"] = opt.seed;

  const PreparedData d = prepare_data(rows, opt);
  const size_t n = rows.size();
  rec["options"] = options_json(opt, in, d);
  rec["input"] = input_json(rows, files, in.warnings, d);
  if (!in.best_of.is_null()) rec["best_of"] = in.best_of;
  if (d.pure_error.df > 0) rec["replicates"] = replicates_json(d.pure_error, rows);

  // which models
  std::vector<std::string> names = opt.models;
  if (names.empty())
    for (const auto& info : model_catalog())
      if (info.response == response && info.by_default) names.push_back(info.name);
  ModelOptions mo;
  mo.phi_relative = opt.phi_relative;
  mo.T_varies = d.T_varies;
  for (const auto& held : opt.fixed) mo.held.push_back(held.first);
  for (const auto& name : names) {  // refuse a law of the other response before any work
    Model m = make_model(name, mo);
    if (m.response != response)
      throw Error("model '" + name + "' fits " + m.response + ", but the input is a " + response + " table" +
                  (opt.tau ? "" : " (use --tau for a probe-grads table)"));
  }

  LawFitter fitter(names, mo, opt, d);
  std::vector<std::string> loud;  // caveats every output format shows (fit.json "warnings", stderr)
  rec["models"] = json::array();
  json skipped = json::array();
  std::map<std::string, FittedLaw> fitted;
  std::map<std::string, std::string> law_of_family;  // equivalence key -> the law fitted for it
  for (const auto& name : names) {
    std::string why;
    Model m = fitter.prepare(name, why);
    if (!why.empty()) {
      skipped.push_back({{"name", name}, {"reason", why}});
      continue;
    }
    auto [family, fresh] = law_of_family.emplace(m.equivalence_key(), name);
    if (!fresh) {
      // the same function with other names (e.g. E for B_T when T is constant): one law, fitted once
      skipped.push_back({{"name", name}, {"equivalent_to", family->second},
                         {"reason", "identical to " + family->second + " on this data (" + m.equivalence_key() +
                                        "): reported as one law"}});
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const FitResult& fr = fitter.fit(name, m);
    LawAnalysis a = analyse_law(m, fr, d, opt);
    a.seconds = seconds_since(t0);
    if (!a.identification.identified()) loud.push_back(m.name + ": " + a.identification.message());
    if (!fr.converged) loud.push_back(a.convergence_warning());
    rec["models"].push_back(law_json(a, d, rows, opt));
    for (size_t i = 0; i < n; ++i) {
      PredictionRow pr;
      pr.model = m.name;
      pr.run = rows[i].run;
      pr.source = rows[i].source;
      pr.line = rows[i].line;
      pr.depth = rows[i].depth;
      pr.width = rows[i].width;
      pr.N = rows[i].N;
      pr.T = rows[i].T;
      pr.observed = a.observed[i];
      pr.predicted = a.predicted[i];
      pr.residual = a.observed[i] - a.predicted[i];
      pr.loo_predicted = a.loo_done ? a.loo[i] : kNaN;
      pr.extrapolation_predicted = a.extrapolation_predicted[i];
      out.predictions.push_back(pr);
    }
    fitted.emplace(name, FittedLaw{m, fr, a.identification});
  }
  rec["skipped_models"] = skipped;
  if (rec["models"].empty()) throw Error("no model could be fitted to this data (see the reasons: " + skipped.dump() + ")");

  Selection sel = select_law(rec["models"], fitted, n, opt.select);
  rec["comparison"] = sel.comparison;
  rec["selected_model"] = sel.selected;
  if (!sel.selected_phi.empty()) rec["selected_phi_model"] = sel.selected_phi;
  rec["selected_identified_model"] = sel.selected_identified.empty() ? json(nullptr) : json(sel.selected_identified);
  loud.insert(loud.end(), sel.warnings.begin(), sel.warnings.end());
  rec["warnings"] = loud;
  return out;
}

}  // namespace shapelaw::fit
