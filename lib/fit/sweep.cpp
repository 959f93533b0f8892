#include "fit/sweep.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/text.h"

namespace shapelaw::fit {

using nlohmann::json;

namespace {

constexpr double kMixedUnits = 1e5;  // tokens of one table spanning more than this factor: mixed units

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string fmt(double v, int digits = 4) { return significant(v, digits); }

// "file:line" of a row, for a message about another row
std::string where(const Row& r) { return r.line > 0 ? r.source + ":" + std::to_string(r.line) : r.source; }

double json_number(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

SweepOptions default_sweep_options() {
  SweepOptions o;
  o.law.bootstrap = 200;      // run bootstrap: enough for 95% percentile CIs of D_crit at a few s per law
  o.law.profile = false;      // the run bootstrap is the interval the sweep reports
  o.law.optimal_draws = 0;    // no compute-optimal frontier: the sweep asks about depth at fixed width
  o.law.select = "loo";       // out of sample: leave one run out
  o.law.loo_max_groups = 0;   // every run
  o.law.holdout = 0;          // leave-one-run-out is the sweep's out-of-sample test
  o.law.fit.resample_starts = 2;  // refits from the 2 best optima of the full fit
  return o;
}

std::vector<std::string> sweep_models() {
  return {"paper-log", "paper-power", "paper-log-E", "no-phi", "kaplan-E", "chinchilla", "gemstones", "inverse-depth"};
}

void check_sweep_rows(const std::vector<Row>& table) {
  // in file order, so that a message names the later of two rows that clash
  std::vector<Row> rows = table;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const Row& a, const Row& b) { return a.source != b.source ? a.source < b.source : a.line < b.line; });
  for (const auto& r : rows) {
    if (!(r.depth > 0))
      throw Error(located(r.source, r.line, "field 'depth': no depth (a sweep compares depths; map the column with "
                                            "--col depth=COLUMN)"));
    if (!(r.width > 0))
      throw Error(located(r.source, r.line, "field 'width': no width (a sweep compares depths at one width; map the "
                                            "column with --col width=COLUMN)"));
  }
  std::map<std::string, const Row*> shape_of;              // run -> its first row
  std::map<std::pair<std::string, double>, const Row*> at;  // (run, tokens) -> row
  std::map<std::string, std::pair<const Row*, const Row*>> token_range;  // file -> rows of min and max tokens
  for (const auto& r : rows) {
    if (!r.run.empty()) {
      auto [it, fresh] = shape_of.emplace(r.run, &r);
      if (!fresh && (it->second->depth != r.depth || it->second->width != r.width))
        throw Error(located(r.source, r.line, "field 'depth'/'width': run '" + r.run + "' is " + fmt(r.depth) + "x" +
                                                  fmt(r.width) + " (depth x width) here but " + fmt(it->second->depth) +
                                                  "x" + fmt(it->second->width) + " at " + where(*it->second) +
                                                  " (one run has one shape; name the runs apart)"));
      auto [jt, new_point] = at.emplace(std::make_pair(r.run, r.tokens), &r);
      if (!new_point)
        throw Error(located(r.source, r.line, "field 'tokens': run '" + r.run + "' has a second row at " +
                                                  fmt(r.tokens, 12) + " tokens (the first at " + where(*jt->second) +
                                                  "): one loss per checkpoint"));
    }
    if (r.tokens > 0) {
      auto [it, fresh] = token_range.emplace(r.source, std::make_pair(&r, &r));
      if (!fresh) {
        if (r.tokens < it->second.first->tokens) it->second.first = &r;
        if (r.tokens > it->second.second->tokens) it->second.second = &r;
      }
    }
  }
  for (const auto& [file, range] : token_range) {
    const Row& lo = *range.first;
    const Row& hi = *range.second;
    if (hi.tokens > kMixedUnits * lo.tokens)
      throw Error(located(hi.source, hi.line, "field 'tokens': " + fmt(hi.tokens, 6) + " here but " + fmt(lo.tokens, 6) +
                                                  " at " + where(lo) +
                                                  ", a factor over 1e5 within one table: tokens in mixed units? (give "
                                                  "every row in one unit, e.g. --col tokens=tokens_b*1e9)"));
  }
  std::map<double, std::set<double>> depths;
  for (const auto& r : rows) depths[r.width].insert(r.depth);
  if (std::none_of(depths.begin(), depths.end(), [](const auto& w) { return w.second.size() >= 2; })) {
    std::set<std::string> files;
    for (const auto& r : rows) files.insert(r.source);
    std::string names;
    for (const auto& f : files) names += (names.empty() ? "" : ", ") + f;
    throw Error(names + ": field 'depth': every width has one depth (" + std::to_string(depths.size()) +
                " widths): the sweep compares depths at one width, so it needs two depths at some width");
  }
}

std::string sweep_rule() {
  return "supported: a law with Phi predicts left-out runs better than every law without it (leave-one-run-out "
         "RMSE), its D_crit's run-bootstrap CI lies inside the data's depth range at some width, and at some width a "
         "run past the paper's D_crit(W) = 2.43 ln W is worse than a shallower run beyond the noise at the largest "
         "matched token count. refuted: at every width that has a run past D_crit(W) and a shallower one, no run past "
         "D_crit is worse than a shallower one beyond the noise, and the laws with Phi either lose out of sample or win "
         "only with a D_crit whose CI lies inside the data's depths at no width (then Phi is a depth term from the first "
         "layer, or one no run reaches, not a critical depth). undecided: anything else (the reasons are listed).";
}

SweepResult run_sweep(std::vector<Row> rows, const std::vector<std::string>& files,
                      const std::vector<std::string>& warnings, const NChoice& n, const SweepOptions& o) {
  SweepResult out;
  canonical_order(rows);
  out.depth = depth_test(rows, o.depth);

  // the data in a few numbers
  std::set<double> widths, depths;
  std::set<std::string> runs, past_runs;
  std::map<std::string, int> per_run;
  int rows_per_run_max = 0;
  double tmin = std::numeric_limits<double>::infinity(), tmax = 0;
  for (const auto& r : rows) {
    widths.insert(r.width);
    depths.insert(r.depth);
    const std::string run = r.run.empty() ? where(r) : r.run;
    runs.insert(run);
    rows_per_run_max = std::max(rows_per_run_max, ++per_run[run]);
    if (r.depth > paper_dcrit(r.width)) past_runs.insert(run);
    if (r.T > 0) { tmin = std::min(tmin, r.T); tmax = std::max(tmax, r.T); }
  }
  const double dmin = *depths.begin(), dmax = *depths.rbegin();

  LawOptions lo = o.law;
  lo.models = sweep_models();
  lo.dcrit_widths.assign(widths.begin(), widths.end());
  FitInput in;
  in.rows = rows;
  in.files = files;
  in.warnings = warnings;
  in.n = n;
  LawOutput fit = run_fit_law(std::move(in), lo);
  out.fit = fit.record;
  out.predictions = std::move(fit.predictions);

  // the laws side by side
  std::map<std::string, json> comparison;
  for (const auto& t : out.fit["comparison"]["table"]) comparison[t["model"].get<std::string>()] = t;
  json laws = json::array();
  double best_phi_loo = std::numeric_limits<double>::infinity(), best_other_loo = best_phi_loo;
  std::string best_phi, best_other;
  bool dcrit_inside = false;
  for (const auto& m : out.fit["models"]) {
    const std::string name = m["name"];
    const json& mt = m["metrics"];
    const bool phi = m.contains("dcrit");
    const double loo = json_number(mt, "loo_rmse");
    json lj = {{"name", name},
               {"formula", m["formula"]},
               {"has_phi", phi},
               {"k", mt["k"]},
               {"rmse", mt["rmse"]},
               {"loo_rmse", num(loo)},
               {"aicc", mt["aicc"]},
               {"delta_aicc", comparison[name].value("delta_aicc", json(nullptr))},
               {"converged", m["fit"]["converged"]},
               {"identified", m["identification"]["status"] == "identified"}};
    if (std::isfinite(loo)) {
      double& best = phi ? best_phi_loo : best_other_loo;
      if (loo < best) {
        best = loo;
        (phi ? best_phi : best_other) = name;
      }
    }
    if (phi) {
      json at = json::array();
      for (const auto& a : m["dcrit"]["at_widths"]) {
        const double w = a["width"];
        const json& ci = a["ci95_bootstrap"];
        const bool have_ci = ci[0].is_number() && ci[1].is_number();
        const bool inside = have_ci && ci[0].get<double>() >= dmin && ci[1].get<double>() <= dmax;
        at.push_back({{"width", w},
                      {"estimate", a["estimate"]},
                      {"ci95_run_bootstrap", ci},
                      {"paper", paper_dcrit(w)},
                      {"paper_inside_ci", have_ci && paper_dcrit(w) >= ci[0].get<double>() &&
                                              paper_dcrit(w) <= ci[1].get<double>()},
                      {"ci_inside_depth_range", inside}});
      }
      lj["dcrit"] = at;
    }
    laws.push_back(lj);
  }
  int widths_inside = 0, widths_with_ci = 0;
  for (const auto& lj : laws)
    if (lj["name"] == best_phi)
      for (const auto& a : lj["dcrit"]) {
        ++widths_with_ci;
        if (a["ci_inside_depth_range"].get<bool>()) ++widths_inside;
      }
  dcrit_inside = widths_inside > 0;

  // the verdict
  const DepthTest& dt = out.depth;
  const bool oos_known = !best_phi.empty() && !best_other.empty();
  const bool phi_wins = oos_known && best_phi_loo < best_other_loo;
  const bool penalty = dt.widths_with_penalty > 0;
  std::vector<std::string> reasons;
  if (!oos_known)
    reasons.push_back("out of sample: no leave-one-run-out error for " +
                      std::string(best_phi.empty() ? "any law with Phi" : "any law without Phi"));
  else
    reasons.push_back("out of sample: " + std::string(phi_wins ? "the best law with Phi, " : "the best law without Phi, ") +
                      (phi_wins ? best_phi : best_other) + ", predicts left-out runs best (RMSE " +
                      fmt(std::min(best_phi_loo, best_other_loo), 4) + " against " +
                      fmt(std::max(best_phi_loo, best_other_loo), 4) + " for " + (phi_wins ? best_other : best_phi) + ")");
  if (!best_phi.empty())
    reasons.push_back(std::string("D_crit of ") + best_phi + ": its run-bootstrap CI lies inside the data's depths (" +
                      fmt(dmin) + "–" + fmt(dmax) + ") at " + std::to_string(widths_inside) + " of " +
                      std::to_string(widths_with_ci) + " widths");
  reasons.push_back("depth test: " + std::to_string(dt.widths_with_past_dcrit) +
                    " width(s) have a run past the paper's D_crit(W) and a shallower run; at " +
                    std::to_string(dt.widths_with_penalty) +
                    " of them a run past D_crit is worse than a shallower one beyond the noise");
  std::string verdict = "undecided";
  if (phi_wins && dcrit_inside && penalty) verdict = "supported";
  else if (oos_known && (!phi_wins || !dcrit_inside) && dt.widths_with_past_dcrit > 0 && !penalty) verdict = "refuted";
  if (verdict == "undecided" && dt.widths_with_past_dcrit == 0)
    reasons.push_back("no width has both a run past the paper's D_crit and a shallower run: the data cannot test the claim");

  json data = {{"rows", rows.size()},
               {"runs", runs.size()},
               {"widths", std::vector<double>(widths.begin(), widths.end())},
               {"depth_range", {dmin, dmax}},
               {"tokens_range", std::isfinite(tmin) ? json::array({tmin, tmax}) : json(nullptr)},
               {"runs_past_paper_dcrit", past_runs.size()},
               {"rows_per_run_max", rows_per_run_max},
               {"n", n.source},
               {"n_note", n.reason},
               {"resample_unit", out.fit["options"]["resample_unit"]}};
  std::vector<std::string> sorted_files = files;
  std::sort(sorted_files.begin(), sorted_files.end());
  json& s = out.sweep;
  s["format"] = "shapelaw.sweep";
  s["version"] = 1;
  s["name"] = o.name.empty() ? (sorted_files.empty() ? std::string("sweep") : sorted_files.front()) : o.name;
  s["files"] = sorted_files;
  s["input_sha256"] = out.fit["input_sha256"];
  s["data"] = data;
  s["depth_tests"] = depth_test_json(dt);
  s["laws"] = laws;
  s["selected_model"] = out.fit["selected_model"];
  s["best_phi_model"] = best_phi.empty() ? json(nullptr) : json(best_phi);
  s["best_other_model"] = best_other.empty() ? json(nullptr) : json(best_other);
  s["verdict"] = verdict;
  s["verdict_reasons"] = reasons;
  s["rule"] = sweep_rule();
  s["warnings"] = out.fit["warnings"];
  s["options"] = {{"bootstrap", lo.bootstrap}, {"seed", lo.seed}, {"select", lo.select},
                  {"seed_sd_assumed", o.depth.assumed_seed_sd}, {"z", o.depth.z},
                  {"objective", out.fit["options"]["objective"]}, {"huber_delta", out.fit["options"]["huber_delta"]},
                  {"space", out.fit["options"]["space"]}};
  return out;
}

}  // namespace shapelaw::fit
