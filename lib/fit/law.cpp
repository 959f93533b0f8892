#include "fit/law.h"
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
#include "util/sha256.h"

namespace shapelaw::fit {

using Eigen::VectorXd;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
json interval(double lo, double hi) { return json::array({num(lo), num(hi)}); }

struct Percentiles {
  double lo = kNaN, hi = kNaN, sd = kNaN;
};
Percentiles summarize(const std::vector<double>& v) {
  Percentiles p;
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

}  // namespace

LawOutput run_fit_law(FitInput in, const LawOptions& opt) {
  LawOutput out;
  json& rec = out.record;
  const std::string response = opt.tau ? "tau" : "loss";
  std::vector<Row>& rows = in.rows;
  canonical_order(rows);
  std::vector<std::string> files = in.files;
  std::sort(files.begin(), files.end());
  const std::vector<std::string>& warnings = in.warnings;
  std::vector<std::string> loud;  // caveats every output format shows (fit.json "warnings", stderr)

  // input hash: the bytes of every input file, in sorted order
  Sha256 hash;
  for (const auto& f : files) {
    std::string content = read_file(f);
    hash.update(content);
  }
  rec["format"] = "shapelaw.fit";
  rec["version"] = 1;
  rec["input_sha256"] = hash.hex_digest();
  rec["seed"] = opt.seed;

  // points, groups, T status
  const size_t n = rows.size();
  std::vector<Point> pts(n);
  std::map<std::string, int> group_ids;
  std::vector<int> groups(n);
  // a probe-grads table may hold several steps of one run: resample runs, not rows
  if (opt.tau)
    for (auto& r : rows)
      if (r.group.empty()) r.group = r.run;
  bool have_groups = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return !r.group.empty(); });
  for (size_t i = 0; i < n; ++i) {
    const Row& r = rows[i];
    Point& p = pts[i];
    p.D = r.depth;
    p.W = r.width;
    p.N = r.N;
    p.T = r.T;
    p.y = r.loss;
    std::string key = have_groups && !r.group.empty() ? "g:" + r.group : "row:" + std::to_string(i);
    auto it = group_ids.emplace(key, (int)group_ids.size()).first;
    groups[i] = it->second;
  }
  if (opt.weights_se) {
    double mean = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!(rows[i].loss_se > 0))
        throw Error(located(rows[i].source, rows[i].line, "--weights se: row has no positive loss_se"));
      double s = opt.fit.log_space ? rows[i].loss_se / rows[i].loss : rows[i].loss_se;
      pts[i].weight = 1.0 / (s * s);
      mean += pts[i].weight;
    }
    mean /= n;
    for (auto& p : pts) p.weight /= mean;
  }
  size_t t_known = std::count_if(rows.begin(), rows.end(), [](const Row& r) { return r.T > 0; });
  bool T_varies = false;
  std::string T_note;
  if (!opt.tau) {
    if (t_known == 0) {
      T_note = "no tokens (or compute) column: the data term is not identifiable";
    } else if (t_known < n) {
      for (const auto& r : rows)
        if (!(r.T > 0))
          throw Error(located(r.source, r.line, "tokens unknown for this row but known for others; "
                                                "give tokens (or compute) for every row, e.g. --col tokens=COLUMN"));
    } else {
      double tmin = 1e300, tmax = 0;
      for (const auto& r : rows) { tmin = std::min(tmin, r.T); tmax = std::max(tmax, r.T); }
      T_varies = tmax > tmin * (1 + 1e-9);
      if (!T_varies) T_note = "tokens T are the same for every row: the data term is not identifiable";
    }
  }
  auto varies = [&](auto get) {
    double lo = 1e300, hi = -1e300;
    for (const auto& r : rows) { lo = std::min(lo, get(r)); hi = std::max(hi, get(r)); }
    return hi > lo;
  };
  const bool shapes = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.depth > 0 && r.width > 0; });
  bool D_varies = varies([](const Row& r) { return r.depth; });
  bool W_varies = varies([](const Row& r) { return r.width; });
  bool N_varies = varies([](const Row& r) { return r.N; });

  json options = {{"objective", opt.fit.objective.kind == Objective::Huber ? "huber" : "ls"},
                  {"huber_delta", opt.fit.objective.delta},
                  {"space", opt.fit.log_space ? "log" : "loss"},
                  {"phi", opt.phi_relative ? "relative" : "absolute"},
                  {"bootstrap", opt.bootstrap},
                  {"bootstrap_by_group", have_groups},
                  {"holdout", opt.holdout},
                  {"loo", opt.loo},
                  {"profile", opt.profile},
                  {"n_source", opt.n_source},
                  {"n_resolved", in.n.source},
                  {"n_note", in.n.reason},
                  {"weights", opt.weights_se ? "se" : "none"},
                  {"response", response},
                  {"select", opt.select},
                  {"grids", [&] { json g = json::object(); for (auto& [k, v] : opt.grids) g[k] = v; return g; }()},
                  {"fixed", [&] { json f = json::object(); for (auto& [k, v] : opt.fixed) f[k] = v; return f; }()},
                  {"threads", opt.fit.threads > 0 ? opt.fit.threads : default_threads()},
                  {"lm", {{"max_iterations", opt.fit.lm.max_iterations}, {"ftol", opt.fit.lm.ftol},
                          {"xtol", opt.fit.lm.xtol}, {"gtol", opt.fit.lm.gtol}}},
                  {"compute_optimal", {{"c_min", opt.optimal.c_min}, {"c_max", opt.optimal.c_max},
                                       {"n_c", opt.optimal.n_c}, {"draws", opt.optimal_draws}}}};
  rec["options"] = options;
  std::set<std::string> tokenizers;
  json tokenizer_kinds = json::object();  // hash -> kind, where the rows name it
  for (const auto& r : rows) {
    if (!r.tokenizer.empty()) tokenizers.insert(r.tokenizer);
    if (!r.tokenizer.empty() && !r.tokenizer_kind.empty()) tokenizer_kinds[r.tokenizer] = r.tokenizer_kind;
  }
  json input = {{"files", files}, {"rows", n}, {"groups", group_ids.size()}, {"warnings", warnings},
                {"tokenizers", tokenizers},
                {"tokenizer_kinds", tokenizer_kinds},
                {"tokens_vary", T_varies}};
  if (!T_note.empty()) input["tokens_note"] = T_note;
  // the data's range: audit marks what lies outside it as an extrapolation of the law
  auto range = [&](auto get) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& r : rows) { lo = std::min(lo, get(r)); hi = std::max(hi, get(r)); }
    return interval(lo, hi);
  };
  json data_range = {{"N", range([](const Row& r) { return r.N; })}};
  if (t_known == n) data_range["T"] = range([](const Row& r) { return r.T; });
  if (shapes) {
    data_range["D"] = range([](const Row& r) { return r.depth; });
    data_range["W"] = range([](const Row& r) { return r.width; });
  }
  input["range"] = data_range;
  input["shapes"] = shapes;
  rec["input"] = input;
  if (!in.best_of.is_null()) rec["best_of"] = in.best_of;

  // replicates (e.g. seeds): the noise floor every law is tested against. Not for τ tables:
  // there the rows of one configuration are steps of one run, not independent replicates.
  const PureError pe = opt.tau ? PureError{} : pure_error(pts, opt.fit.log_space);
  if (pe.df > 0) {
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
    rec["replicates"] = rj;
  }

  // which models
  std::vector<std::string> names = opt.models;
  if (names.empty())
    for (const auto& info : model_catalog())
      if (info.response == response) names.push_back(info.name);
  ModelOptions mo;
  mo.phi_relative = opt.phi_relative;
  mo.T_varies = T_varies;
  for (const auto& held : opt.fixed) mo.held.push_back(held.first);

  for (const auto& name : names) {  // refuse a law of the other response before any work
    Model m = make_model(name, mo);
    if (m.response != response)
      throw Error("model '" + name + "' fits " + m.response + ", but the input is a " + response + " table" +
                  (opt.tau ? "" : " (use --tau for a probe-grads table)"));
  }
  rec["models"] = json::array();
  json skipped = json::array();
  std::map<std::string, FittedLaw> fitted;
  std::map<std::string, std::string> law_of_family;  // equivalence key -> the law fitted for it
  OptimalOptions optimal = opt.optimal;
  optimal.shapes = shapes;
  // A law as fitted here: the registry's, with --grid and --fix applied, and why it cannot be fitted ("" if it can).
  auto prepare = [&](const std::string& name, std::string& why, const ModelOptions& options) {
    Model m = make_model(name, options);
    for (const auto& [gname, values] : opt.grids)
      for (int t = 0; t < m.n_nl(); ++t)
        if (m.nl_names[t] == gname) m.nl_grid[t] = values;
    fix_parameters(m, opt.fixed);
    why.clear();
    if (m.uses_shape && !shapes) why = "needs depth and width; the rows have none";
    else if (m.has_phi && !D_varies) why = "depth does not vary: the depth penalty is not identifiable";
    else if (m.has_phi && !W_varies) why = "width does not vary: D_crit(W) and mu are not identifiable";
    else if (m.response == "loss" && !N_varies) why = "N does not vary: the capacity term is not identifiable";
    else if (m.response == "tau" && !W_varies) why = "width does not vary";
    else if ((int)n <= m.n_free()) why = std::to_string(n) + " rows for " + std::to_string(m.n_params()) + " parameters";
    return m;
  };
  // Nested laws: a law that contains another (kaplan ⊂ no-phi ⊂ paper-log, kaplan-E ⊂ chinchilla,
  // fit/model.h nested_start: by name, the capacity term carried into Box-Cox coordinates)
  // starts also from that law's optimum, its own extra linear terms at 0 (the same function)
  // and its extra nonlinear parameters at each grid value. Multi-start grids alone can miss
  // the nested law's basin (in the paper's coordinates no-phi then crawled along A → −∞,
  // α → 0⁻, B_T → +∞ to an objective worse than kaplan's); the likelihood ratio against it is
  // then inflated.
  std::map<std::string, FitResult> fits;
  std::function<const FitResult&(const std::string&, const Model&)> fit_law = [&](const std::string& name,
                                                                                  const Model& m) -> const FitResult& {
    if (auto it = fits.find(name); it != fits.end()) return it->second;
    std::vector<Eigen::VectorXd> extra;
    for (const auto& other : names) {
      if (other == name) continue;
      std::string why_other;
      Model o = prepare(other, why_other, mo);
      if (!why_other.empty() || o.response != m.response || o.n_params() >= m.n_params()) continue;
      Eigen::VectorXd probe;  // whether m can express o at all, before fitting o
      if (!nested_start(o, Eigen::VectorXd::Ones(o.n_params()), m, probe)) continue;
      const FitResult& inner = fit_law(other, o);
      if (!std::isfinite(inner.objective)) continue;
      // the extra nonlinear parameters' grids (at most 64 combinations, in grid order)
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
    // Φ's max(0, ·) and the Huber loss put kinks in the surface, and the starts end in different
    // places in either coordinates (on the micro study ~90 distinct optima of 105 starts, 1e-3
    // apart): the same law fitted in the paper's coordinates from the same starts, its best optima
    // carried over, keeps the Box-Cox fit never worse than that one (a held s or L1 has no twin).
    const bool slope_held = std::any_of(m.fixed.begin(), m.fixed.end(), [](const std::string& q) { return q == "s" || q == "L1"; });
    if (m.box_cox && !slope_held) {
      ModelOptions paper = mo;
      paper.box_cox = false;
      std::string why_twin;
      const Model twin = prepare(name, why_twin, paper);
      std::vector<Eigen::VectorXd> twin_extra;  // the nested laws' starts, in the twin's coordinates
      for (const auto& e : extra) {
        Eigen::VectorXd t;
        if (nested_start(m, e, twin, t)) twin_extra.push_back(t);
      }
      const FitResult tf = fit_multistart(twin, pts, opt.fit, twin_extra);
      for (const auto& q : tf.optima_params) {
        Eigen::VectorXd start;
        if (nested_start(twin, q, m, start)) extra.push_back(start);
      }
    }
    return fits.emplace(name, fit_multistart(m, pts, opt.fit, extra)).first->second;
  };
  for (const auto& name : names) {
    auto t0 = std::chrono::steady_clock::now();
    std::string why;
    Model m = prepare(name, why, mo);  // (its response was checked above, before any work)
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
    FitResult fr = fit_law(name, m);
    const Identification ident = identify(m, pts, fr, opt.fit);
    const int P = m.n_params();
    auto pnames = m.param_names();
    BootstrapResult boot;
    // a law with every parameter held is evaluated, not fitted: resampling would return the
    // held values B times, so it has no bootstrap and no CIs (LOO and the extrapolation check
    // still run: they evaluate it out of sample, which is the same evaluation)
    const bool evaluated = m.n_free() == 0;
    if (opt.bootstrap > 0 && !evaluated) boot = bootstrap(m, pts, groups, fr, opt.fit, opt.bootstrap, opt.seed);
    LeaveOneOut loo;
    if (opt.loo) loo = leave_one_out(m, pts, groups, fr, opt.fit, size_t(opt.loo_max_groups), opt.seed, name);
    Extrapolation ex = opt.holdout > 0 ? extrapolate(m, pts, opt.fit, opt.holdout) : Extrapolation{};

    json mj;
    mj["name"] = m.name;
    mj["formula"] = m.formula;
    mj["response"] = m.response;
    mj["param_names"] = pnames;
    // profile-likelihood intervals of the nonlinear parameters, in parallel
    std::vector<ProfileInterval> profiles(P);
    if (opt.profile) {
      std::vector<int> which;
      for (int q = m.n_lin(); q < P; ++q)
        if (!m.is_fixed(q)) which.push_back(q);
      parallel_for(which.size(), opt.fit.threads,
                   [&](size_t w) { profiles[which[w]] = profile_interval(m, pts, fr, which[w], opt.fit); });
    }
    json params = json::object();
    for (int q = 0; q < P; ++q) {
      std::vector<double> v;
      for (const auto& d : boot.draws) v.push_back(d[q]);
      Percentiles pc = summarize(v);
      double est = fr.p[q], se = fr.se[q];
      const double tq = t975((double)n - m.n_free());
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
      if (profiles[q].computed) {
        pj["ci95_profile"] = interval(profiles[q].lo, profiles[q].hi);
        if (profiles[q].lo_at_bound || profiles[q].hi_at_bound)
          pj["ci95_profile_open"] = json::array({profiles[q].lo_at_bound, profiles[q].hi_at_bound});
      }
      params[pnames[q]] = pj;
    }
    mj["params"] = params;
    mj["not_identifiable"] = m.not_identifiable;
    std::vector<std::string> weak = fr.weakly_identified;
    for (const auto& w : ident.not_identified)
      if (std::find(weak.begin(), weak.end(), w) == weak.end()) weak.push_back(w);
    mj["weakly_identified"] = weak;
    {
      json ranges = json::object();
      for (const auto& r : ident.ranges) ranges[r.name] = interval(r.lo, r.hi);
      mj["identification"] = {{"status", ident.identified() ? "identified" : "weakly_identified"},
                              {"tolerance", ident.tolerance},
                              {"solutions_within_tolerance", ident.solutions_within},
                              {"not_identified", ident.not_identified},
                              {"ranges", ranges}};
    }
    mj["notes"] = m.notes;
    if (evaluated)
      mj["notes"].push_back("evaluated, not fitted: every parameter is held with --fix (objective and metrics at "
                            "the held values; no confidence intervals, no bootstrap)");
    if (!ident.identified()) {
      mj["notes"].push_back(ident.message());
      loud.push_back(m.name + ": " + ident.message());
    }
    if (!fr.converged) {
      const std::string msg = m.name + ": the best of " + std::to_string(fr.n_starts) + " starts did not converge (" +
                              fr.status + " after " + std::to_string(fr.iterations) + " iterations; " +
                              std::to_string(fr.n_converged) + " starts converged): its tests and its place in the "
                              "selection are not to be trusted (raise --max-iterations)";
      mj["notes"].push_back(msg);
      loud.push_back(msg);
    }
    json cov = json::array();
    for (int a = 0; a < P; ++a) {
      json row = json::array();
      for (int b = 0; b < P; ++b) row.push_back(num(fr.cov(a, b)));
      cov.push_back(row);
    }
    mj["covariance"] = cov;
    json optima = json::array();
    for (auto& [obj, count] : fr.optima) optima.push_back({{"objective", obj}, {"starts", count}});
    mj["fit"] = {{"objective", fr.objective},       {"converged", fr.converged},
                 {"status", fr.status},             {"iterations", fr.iterations},
                 {"starts", fr.n_starts}, {"total_iterations", fr.total_iterations},           {"converged_starts", fr.n_converged},
                 {"starts_at_best", fr.n_at_best},  {"distinct_optima", fr.n_distinct_optima},
                 {"optima", optima},                {"condition_number", num(fr.condition)}};
    mj["bootstrap"] = {{"requested", boot.requested}, {"used", boot.draws.size()}, {"failed", boot.failed},
                       {"not_converged", boot.not_converged}, {"by_group", have_groups}};
    if (evaluated && opt.bootstrap > 0) mj["bootstrap"]["reason"] = "every parameter is held: nothing to resample";
    mj["evaluated"] = evaluated;
    json draws = json::array();
    for (const auto& d : boot.draws) {
      json row = json::array();
      for (int q = 0; q < P; ++q) row.push_back(d[q]);
      draws.push_back(row);
    }
    mj["bootstrap_draws"] = draws;

    // metrics
    std::vector<double> obs(n), pred(n);
    for (size_t i = 0; i < n; ++i) {
      obs[i] = pts[i].y;
      pred[i] = m.predict(pts[i], fr.p);
    }
    Metrics met = compute_metrics(obs, pred, fr.residuals.squaredNorm(), fr.objective, m.n_free());
    json metrics = {{"n", met.n}, {"k", met.k}, {"objective", met.objective}, {"rss_fit_space", met.rss},
                    {"r2", num(met.r2)}, {"rmse", num(met.rmse)}, {"aic", num(met.aic)},
                    {"aicc", num(met.aicc)}, {"bic", num(met.bic)}};
    if (opt.loo) loo.add_metrics(obs, metrics, mj["notes"]);
    mj["metrics"] = metrics;
    if (pe.df > 0) {
      // a parameter pinned at a bound gives the law no freedom: it does not use up a degree
      // of freedom of the lack of fit (counting it would make the test anti-conservative)
      int at_bound = 0;
      for (int q = 0; q < P; ++q) at_bound += fr.at_bound[q] && !m.is_fixed(q);
      LackOfFit lof = lack_of_fit(met.rss, met.n, met.k - at_bound, pe);
      mj["lack_of_fit"] = lof.computed ? json{{"f", lof.f}, {"df_lof", lof.df_lof}, {"df_pe", lof.df_pe},
                                               {"ss_lof", lof.ss_lof}, {"p_value", lof.p_value},
                                               {"params_at_bound", at_bound}}
                                       : json{{"reason", lof.reason}};
    }
    std::vector<double> ex_pred(n, kNaN);
    if (ex.done) {
      for (size_t q = 0; q < ex.test_index.size(); ++q) ex_pred[ex.test_index[q]] = ex.predicted[q];
      json held = json::array();
      for (int i : ex.test_index) held.push_back(rows[i].run);
      mj["extrapolation"] = {{"by", m.response == "tau" ? "width" : "N"}, {"n_train", ex.n_train},
                             {"n_test", ex.n_test}, {"threshold", ex.n_threshold}, {"rmse", ex.rmse},
                             {"mean_error", ex.mean_error}, {"max_abs_error", ex.max_abs_error},
                             {"held_out", held}};
    } else if (opt.holdout > 0) {
      mj["extrapolation"] = {{"reason", ex.reason}};
    }

    // derived quantities
    json derived = json::object();
    if (!m.dcrit_form.empty()) {
      json dc = {{"form", m.dcrit_form}};
      if (m.dcrit_form == "log") dc["kappa"] = fr.p[m.index_of("kappa")];
      else { dc["c"] = fr.p[m.index_of("c")]; dc["a"] = fr.p[m.index_of("a")]; }
      dc["phi"] = opt.phi_relative ? "relative" : "absolute";
      json at = json::array();
      for (double W : opt.dcrit_widths) {
        std::vector<double> v;
        for (const auto& d : boot.draws) v.push_back(m.dcrit(W, d));
        Percentiles pc = summarize(v);
        at.push_back({{"width", W}, {"estimate", m.dcrit(W, fr.p)}, {"ci95_bootstrap", interval(pc.lo, pc.hi)}});
      }
      dc["at_widths"] = at;
      // rows sitting exactly on the kink of max(0, D − D_crit(W)): the objective is not
      // differentiable there, so Jacobian CIs of the D_crit parameters are not valid
      json kinks = json::array();
      for (size_t i = 0; i < n; ++i)
        if (std::abs(pts[i].D - m.dcrit(pts[i].W, fr.p)) <= 1e-6 * pts[i].D) kinks.push_back(rows[i].run);
      if (!kinks.empty()) {
        dc["on_kink"] = kinks;
        mj["notes"].push_back("the optimum puts D_crit(W) exactly on the depth of run(s) " + kinks.dump() +
                              " (the kink of max(0, D - D_crit)): Jacobian CIs of the D_crit parameters are not "
                              "valid there; use the bootstrap CIs");
      }
      mj["dcrit"] = dc;
    }
    for (const auto& [dname, fn] : m.derived) {  // the law's own derived quantities (e.g. kaplan's N_c)
      std::vector<double> v;
      for (const auto& d : boot.draws) v.push_back(fn(d));
      Percentiles pc = summarize(v);
      derived[dname] = {{"estimate", num(fn(fr.p))}, {"ci95_bootstrap", interval(pc.lo, pc.hi)}};
    }
    if (m.box_cox) {
      // the paper's A and constant exist only off the ridge: near alpha = 0 they are ±1/alpha
      // large and cancel, and only s, L1 and alpha describe the fitted surface
      const double alpha = fr.p[m.index_of("alpha")];
      const bool flat = !(std::abs(alpha) > kFlatAlpha);
      const std::string paper_constant = m.derived.back().first;  // (model.cpp: A, then the constant)
      for (const std::string& dname : {std::string("A"), paper_constant}) derived[dname]["alpha_near_zero"] = flat;
      if (flat) {
        const std::string msg = m.name + ": alpha = " + std::to_string(alpha) + " (|alpha| <= " +
                                std::to_string(kFlatAlpha) + "): the capacity term is L1 - s*ln N to first order; A = s/alpha "
                                "and " + paper_constant + " = L1 - s/alpha are not estimates (derived.A.alpha_near_zero)";
        mj["notes"].push_back(msg);
      }
    }
    if (m.response == "loss") {
      OptimalCurve oc = compute_optimal(m, fr.p, optimal);
      json oj = optimal_json(oc, shapes);
      if (oc.available && opt.optimal_draws > 0 && !boot.draws.empty()) {
        size_t nd = std::min<size_t>(opt.optimal_draws, boot.draws.size());
        std::vector<OptimalCurve> curves(nd);
        parallel_for(nd, opt.fit.threads, [&](size_t b) { curves[b] = compute_optimal(m, boot.draws[b], optimal); });
        json ci = json::object();
        auto add = [&](const char* key, double OptimalCurve::*f) {
          std::vector<double> v;
          for (const auto& c : curves) v.push_back(c.*f);
          Percentiles pc = summarize(v);
          int finite = std::count_if(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
          ci[key] = {{"ci95_bootstrap", interval(pc.lo, pc.hi)}, {"draws_with_interior_optimum", finite}};
        };
        add("N", &OptimalCurve::slope_N);
        add("T", &OptimalCurve::slope_T);
        if (shapes) {
          add("D_deepest", &OptimalCurve::slope_D_hi);
          add("W_at_D_deepest", &OptimalCurve::slope_W_at_D_hi);
          add("D_shallowest", &OptimalCurve::slope_D_lo);
          add("W_at_D_shallowest", &OptimalCurve::slope_W_at_D_lo);
        }
        oj["slopes_bootstrap"] = ci;
        oj["draws"] = nd;
      }
      derived["compute_optimal"] = oj;
    }
    mj["derived"] = derived;
    mj["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rec["models"].push_back(mj);

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
      pr.observed = obs[i];
      pr.predicted = pred[i];
      pr.residual = obs[i] - pred[i];
      pr.loo_predicted = opt.loo ? loo[i] : kNaN;
      pr.extrapolation_predicted = ex_pred[i];
      out.predictions.push_back(pr);
    }
    fitted.emplace(name, FittedLaw{m, fr, ident});
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
