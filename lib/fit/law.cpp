#include "fit/law.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "fit/parallel.h"
#include "fit/profile.h"
#include "fit/replicates.h"
#include "fit/resample.h"
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

json optimal_json(const OptimalCurve& c) {
  json j;
  j["available"] = c.available;
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (!c.available) return j;
  j["shape_unique"] = c.shape_unique;
  j["n_interior"] = c.n_interior;
  j["slopes"] = {{"N", num(c.slope_N)}, {"T", num(c.slope_T)}, {"D_deepest", num(c.slope_D_hi)},
                 {"W_at_D_deepest", num(c.slope_W_at_D_hi)}, {"D_shallowest", num(c.slope_D_lo)},
                 {"W_at_D_shallowest", num(c.slope_W_at_D_lo)}};
  json pts = json::array();
  for (const auto& p : c.points)
    pts.push_back({{"C", p.C}, {"L", num(p.L)}, {"N", p.N}, {"T", p.T}, {"D_shallowest", p.D_lo},
                   {"D_deepest", p.D_hi}, {"W_at_D_shallowest", p.W_at_D_lo}, {"W_at_D_deepest", p.W_at_D_hi},
                   {"boundary", p.boundary}});
  j["points"] = pts;
  return j;
}

}  // namespace

LawOutput run_fit_law(std::vector<Row> rows, const std::vector<std::string>& files,
                      const std::vector<std::string>& warnings, const LawOptions& opt) {
  LawOutput out;
  json& rec = out.record;
  const std::string response = opt.tau ? "tau" : "loss";

  // input hash: the bytes of every input file, in order
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
  for (const auto& r : rows)
    if (!r.tokenizer.empty()) tokenizers.insert(r.tokenizer);
  json input = {{"files", files}, {"rows", n}, {"groups", group_ids.size()}, {"warnings", warnings},
                {"tokenizers", tokenizers},
                {"tokens_vary", T_varies}};
  if (!T_note.empty()) input["tokens_note"] = T_note;
  rec["input"] = input;

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

  for (const auto& name : names) {  // refuse a law of the other response before any work
    Model m = make_model(name, mo);
    if (m.response != response)
      throw Error("model '" + name + "' fits " + m.response + ", but the input is a " + response + " table" +
                  (opt.tau ? "" : " (use --tau for a probe-grads table)"));
  }
  rec["models"] = json::array();
  json skipped = json::array();
  std::map<std::string, std::pair<Model, FitResult>> fitted;
  for (const auto& name : names) {
    auto t0 = std::chrono::steady_clock::now();
    Model m = make_model(name, mo);
    for (const auto& [gname, values] : opt.grids)
      for (int t = 0; t < m.n_nl(); ++t)
        if (m.nl_names[t] == gname) m.nl_grid[t] = values;
    fix_parameters(m, opt.fixed);
    if (m.response != response) {
      throw Error("model '" + name + "' fits " + m.response + ", but the input is a " + response +
                  " table" + (opt.tau ? "" : " (use --tau for a probe-grads table)"));
    }
    std::string why;
    if (m.has_phi && !D_varies) why = "depth does not vary: the depth penalty is not identifiable";
    else if (m.has_phi && !W_varies) why = "width does not vary: D_crit(W) and mu are not identifiable";
    else if (m.response == "loss" && !N_varies) why = "N does not vary: the capacity term is not identifiable";
    else if (m.response == "tau" && !W_varies) why = "width does not vary";
    else if ((int)n <= m.n_free()) why = std::to_string(n) + " rows for " + std::to_string(m.n_params()) + " parameters";
    if (!why.empty()) {
      skipped.push_back({{"name", name}, {"reason", why}});
      continue;
    }
    FitResult fr = fit_multistart(m, pts, opt.fit);
    const int P = m.n_params();
    auto pnames = m.param_names();
    BootstrapResult boot;
    if (opt.bootstrap > 0) boot = bootstrap(m, pts, groups, fr, opt.fit, opt.bootstrap, opt.seed);
    std::vector<double> loo;
    if (opt.loo) loo = leave_one_out(m, pts, groups, fr, opt.fit);
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
      if (q < m.n_lin() && est <= 0 && m.lin_names[q] != "E") pj["non_positive"] = true;
      if (profiles[q].computed) {
        pj["ci95_profile"] = interval(profiles[q].lo, profiles[q].hi);
        if (profiles[q].lo_at_bound || profiles[q].hi_at_bound)
          pj["ci95_profile_open"] = json::array({profiles[q].lo_at_bound, profiles[q].hi_at_bound});
      }
      params[pnames[q]] = pj;
    }
    mj["params"] = params;
    mj["not_identifiable"] = m.not_identifiable;
    mj["weakly_identified"] = fr.weakly_identified;
    mj["notes"] = m.notes;
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
    if (opt.loo) {
      double ss = 0;
      int cnt = 0;
      for (size_t i = 0; i < n; ++i)
        if (std::isfinite(loo[i])) { ss += (loo[i] - obs[i]) * (loo[i] - obs[i]); ++cnt; }
      metrics["loo_rmse"] = cnt ? num(std::sqrt(ss / cnt)) : json(nullptr);
      metrics["loo_failed"] = (int)n - cnt;
    }
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
    if (m.name == "kaplan") {
      auto nc = [&](const VectorXd& p) { return std::pow(p[0], 1.0 / p[1]); };
      std::vector<double> v;
      for (const auto& d : boot.draws) v.push_back(nc(d));
      Percentiles pc = summarize(v);
      derived["Nc"] = {{"estimate", num(nc(fr.p))}, {"ci95_bootstrap", interval(pc.lo, pc.hi)}};
    }
    if (m.response == "loss") {
      OptimalCurve oc = compute_optimal(m, fr.p, opt.optimal);
      json oj = optimal_json(oc);
      if (oc.available && opt.optimal_draws > 0 && !boot.draws.empty()) {
        size_t nd = std::min<size_t>(opt.optimal_draws, boot.draws.size());
        std::vector<OptimalCurve> curves(nd);
        parallel_for(nd, opt.fit.threads, [&](size_t b) { curves[b] = compute_optimal(m, boot.draws[b], opt.optimal); });
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
        add("D_deepest", &OptimalCurve::slope_D_hi);
        add("W_at_D_deepest", &OptimalCurve::slope_W_at_D_hi);
        add("D_shallowest", &OptimalCurve::slope_D_lo);
        add("W_at_D_shallowest", &OptimalCurve::slope_W_at_D_lo);
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
      pr.residual = pred[i] - obs[i];
      pr.loo_predicted = opt.loo ? loo[i] : kNaN;
      pr.extrapolation_predicted = ex_pred[i];
      out.predictions.push_back(pr);
    }
    fitted.emplace(name, std::make_pair(m, fr));
  }
  rec["skipped_models"] = skipped;
  if (rec["models"].empty()) throw Error("no model could be fitted to this data (see the reasons: " + skipped.dump() + ")");

  // comparison
  json comp;
  comp["criterion"] = opt.select;
  json table = json::array();
  double best_score = std::numeric_limits<double>::infinity();
  std::string selected, selected_phi;
  double best_phi = std::numeric_limits<double>::infinity();
  auto score_of = [&](const json& mj) {
    const json& mt = mj["metrics"];
    const char* key = opt.select == "aic" ? "aic" : opt.select == "bic" ? "bic" : opt.select == "loo" ? "loo_rmse" : "aicc";
    return mt.contains(key) && mt[key].is_number() ? mt[key].get<double>() : std::numeric_limits<double>::infinity();
  };
  for (const auto& mj : rec["models"]) {
    double s = score_of(mj);
    if (s < best_score) { best_score = s; selected = mj["name"]; }
    if (mj.contains("dcrit") && s < best_phi) { best_phi = s; selected_phi = mj["name"]; }
  }
  double wsum = 0;
  for (const auto& mj : rec["models"]) {
    const json& mt = mj["metrics"];
    table.push_back({{"model", mj["name"]}, {"k", mt["k"]}, {"aicc", mt["aicc"]}, {"aic", mt["aic"]},
                     {"bic", mt["bic"]}, {"r2", mt["r2"]}, {"rmse", mt["rmse"]},
                     {"loo_rmse", mt.value("loo_rmse", json(nullptr))}, {"score", num(score_of(mj))}});
  }
  // Akaike weights on AICc
  double min_aicc = std::numeric_limits<double>::infinity();
  for (auto& t : table)
    if (t["aicc"].is_number()) min_aicc = std::min(min_aicc, t["aicc"].get<double>());
  for (auto& t : table)
    if (t["aicc"].is_number()) wsum += std::exp(-0.5 * (t["aicc"].get<double>() - min_aicc));
  for (auto& t : table) {
    if (t["aicc"].is_number()) {
      double d = t["aicc"].get<double>() - min_aicc;
      t["delta_aicc"] = d;
      t["akaike_weight"] = std::exp(-0.5 * d) / wsum;
    }
  }
  comp["table"] = table;
  // likelihood-ratio tests: with Φ against without Φ (nested: γ = 0 removes μ and D_crit)
  json lrts = json::array();
  for (const std::string full : {"paper-log", "paper-power"}) {
    auto a = fitted.find(full), b = fitted.find("no-phi");
    if (a == fitted.end() || b == fitted.end()) continue;
    double rss1 = a->second.second.residuals.squaredNorm(), rss0 = b->second.second.residuals.squaredNorm();
    int df = a->second.first.n_free() - b->second.first.n_free();
    double lr = (double)n * std::log(rss0 / rss1);
    lrts.push_back({{"full", full}, {"reduced", "no-phi"}, {"statistic", num(lr)}, {"df", df},
                    {"p_value", num(chi2_sf(std::max(0.0, lr), df))},
                    {"note", "Gaussian LR n*ln(RSS0/RSS1) in the fitting space; D_crit and mu vanish under the null "
                             "(Davies' problem), so the chi-square p-value is approximate (anti-conservative)"}});
  }
  comp["likelihood_ratio"] = lrts;
  rec["comparison"] = comp;
  rec["selected_model"] = selected;
  if (!selected_phi.empty()) rec["selected_phi_model"] = selected_phi;
  return out;
}

}  // namespace shapelaw::fit
