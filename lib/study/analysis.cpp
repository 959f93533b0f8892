#include "study/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "util/error.h"

namespace shapelaw::study {

using nlohmann::json;

namespace {
std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string lr_text(double lr) { return fmt("%g", lr); }

json cell_json(const Cell& c) {
  return {{"row", c.row}, {"depth", c.depth}, {"width", c.width}, {"lr", c.lr}, {"n", c.n}, {"mean_val_loss", c.mean},
          {"sd", c.sd < 0 ? json(nullptr) : json(c.sd)}, {"run_ids", c.run_ids}, {"summaries", c.paths}};
}
json spread_json(const SeedSpread& s) {
  return {{"available", s.available}, {"sd", s.available ? json(s.sd) : json(nullptr)}, {"df", s.df}, {"source", s.source}};
}
json excess_json(const WidthExcess& e, const PenaltyVerdict& v) {
  static const char* states[] = {"vanishes", "shrinks", "survives", "unjudged"};
  return {{"width", e.width}, {"best_depth", e.best_depth}, {"best_loss", e.best_loss}, {"n_best", e.n_best},
          {"deepest_depth", e.deepest_depth}, {"deepest_loss", e.deepest_loss}, {"n_deepest", e.n_deepest},
          {"excess", e.excess}, {"se", e.se < 0 ? json(nullptr) : json(e.se)},
          {"penalty", states[int(v.state)]}, {"verdict", v.text}};
}
json law_json(const LawEvidence& l) {
  return {{"tested", l.tested}, {"statistic", l.statistic}, {"df", l.df}, {"p_value", l.p_value},
          {"selected", l.selected}, {"phi_selected", l.phi_selected}, {"flags", l.flags}, {"usable", l.usable()},
          {"kappa", std::isfinite(l.kappa) ? json(l.kappa) : json(nullptr)}, {"kappa_at_bound", l.kappa_at_bound},
          {"kappa_ci95", std::isfinite(l.kappa_lo) ? json::array({l.kappa_lo, l.kappa_hi}) : json(nullptr)},
          {"dcrit_below_grid", l.dcrit_below_grid}, {"dcrit_unresolved", l.dcrit_unresolved},
          {"criterion", l.criterion}, {"phi_delta", std::isfinite(l.phi_delta) ? json(l.phi_delta) : json(nullptr)},
          {"capacity_degenerate", l.capacity_degenerate},
          {"s", l.s}, {"A", l.A}, {"alpha", l.alpha}, {"sentence", law_sentence(l)}};
}
json arm_json(const Arm& a) {
  json j = {{"name", a.name}, {"title", a.title}};
  j["selected"] = json::array();
  for (const auto& c : a.selected) j["selected"].push_back(cell_json(c));
  j["excess"] = json::array();
  for (size_t i = 0; i < a.excess.size(); ++i) j["excess"].push_back(excess_json(a.excess[i], a.verdicts[i]));
  if (!a.best.empty()) {
    j["best_lr"] = json::array();
    for (const auto& b : a.best)
      j["best_lr"].push_back({{"row", b.best.row}, {"depth", b.best.depth}, {"width", b.best.width}, {"lr", b.best.lr},
                              {"mean_val_loss", b.best.mean}, {"n", b.best.n},
                              {"edge", b.single ? json("single") : b.edge.empty() ? json(nullptr) : json(b.edge)},
                              {"tried", b.tried}});
  }
  j["law"] = a.law ? law_json(*a.law) : json(nullptr);
  return j;
}
void judge(Arm& arm, const Arm* reference) {
  arm.verdicts.clear();
  for (const auto& e : arm.excess) {
    const WidthExcess* ref = nullptr;
    if (reference)
      for (const auto& r : reference->excess)
        if (r.width == e.width) ref = &r;
    arm.verdicts.push_back(judge_penalty(e, ref));
  }
}
}  // namespace

double tokens_per_param(const std::vector<Run>& runs) {
  double best = INFINITY;
  for (const Run& r : runs) best = std::min(best, r.tokens / r.params_total);
  return runs.empty() ? 0 : best;
}

std::string penalty_sentence(const std::vector<WidthExcess>& excess, const std::vector<PenaltyVerdict>& verdicts,
                             const SeedSpread& spread) {
  if (excess.empty()) return "No width has a depth sweep: the grid cannot show a depth penalty.";
  int survives = 0, vanishes = 0, unjudged = 0, deepest_best = 0;
  std::string per;
  for (size_t i = 0; i < excess.size(); ++i) {
    const auto& e = excess[i];
    const auto& v = verdicts[i];
    survives += v.state == Penalty::survives || v.state == Penalty::shrinks;
    vanishes += v.state == Penalty::vanishes;
    unjudged += v.state == Penalty::unjudged;
    if (!per.empty()) per += "; ";
    per += "W = " + std::to_string(e.width) + ": ";
    deepest_best += e.deepest_is_best();
    if (e.deepest_is_best())
      per += "the deepest run (D = " + std::to_string(e.deepest_depth) + ") is the best";
    else
      per += "D = " + std::to_string(e.deepest_depth) + " is " + fmt("%+.3f", e.excess) +
             (e.se >= 0 ? " ± " + fmt("%.3f", e.se) + " nats (" + fmt("%.1f", e.excess / e.se) + " SE)" : " nats") +
             " above the best depth D = " + std::to_string(e.best_depth);
  }
  const int n = int(excess.size());
  std::string lead;
  if (unjudged == n)
    lead = "Undecided: one seed per configuration, so no excess can be judged against seed noise";
  else if (survives == n)
    lead = "Yes, at every width";
  else if (deepest_best == n)  // needs no SE: with one seed too
    lead = std::string("No: at every width the deepest run is the best") +
           (spread.available ? "" : " (one seed per configuration: no SE, and none is needed for that)");
  else if (vanishes == n)
    lead = "No: at no width is the deepest run more than 2 SE worse than the best depth";
  else
    lead = "At " + std::to_string(survives) + " of " + std::to_string(n) + " widths";
  std::string s = lead + ": " + per + ".";
  if (spread.available) s += " SE from the seed SD " + fmt("%.4f", spread.sd) + " nats (" + spread.source + ").";
  return s;
}

namespace {
std::string kappa_text(const LawEvidence& l) {
  std::string t = "κ = " + fmt("%.3g", l.kappa);
  if (std::isfinite(l.kappa_lo)) t += ", 95% CI [" + fmt("%.3g", l.kappa_lo) + ", " + fmt("%.3g", l.kappa_hi) + "]";
  if (l.kappa_at_bound) t += ", at its bound";
  return t;
}
}  // namespace

std::string law_sentence(const LawEvidence& l) {
  const std::string test = "likelihood-ratio statistic " + fmt("%.3g", l.statistic) + " on " + std::to_string(l.df) +
                           " df, p = " + fmt("%.2g", l.p_value) + ", approximate";
  std::string s;
  if (!l.tested)
    s = "Not testable with this grid: fit-law could not fit the paper's law (paper-log) against the same law without Φ.";
  else if (!l.flags.empty())
    s = "No verdict: fit-law flags its test of Φ (" + l.flags.front() +
        "), so nothing is drawn from it (" + test + ").";
  else if (l.dcrit_below_grid)
    s = "Not as the paper states it: the fitted critical depth D_crit(W) = κ·ln W lies at or below the shallowest run "
        "at every width (" + kappa_text(l) + "), so in the law the penalty acts from the first layer: it describes "
        "loss rising with depth from the shallowest run, and there is no critical depth inside the grid (" + test + ").";
  else if (l.p_value < 0.05 && l.phi_selected && l.dcrit_unresolved)
    s = "Φ yes, its critical depth unresolved: the paper's law with Φ fits better than the same law without it (" +
        test + ") and `" + l.selected + "` is the selected law, but the lower end of κ's 95% CI puts D_crit(W) = κ·ln W "
        "at or below the shallowest run at every width (" + kappa_text(l) + "): the grid does not show a range of "
        "depths where adding layers helps before the penalty starts.";
  else if (l.p_value < 0.05 && l.phi_selected)
    s = "Yes within the grid: the paper's law with Φ (D_crit = κ·ln W, " + kappa_text(l) +
        ") fits better than the same law without it (" + test + "), and `" + l.selected + "` is the selected law.";
  else if (l.p_value < 0.05)
    s = "Undecided: the likelihood-ratio test favours Φ (" + test + "), but " +
        (l.criterion.empty() ? std::string("fit-law's selection") : l.criterion) + " selects `" + l.selected + "`" +
        (std::isfinite(l.phi_delta) ? " (paper-log " + fmt("%.3g", l.phi_delta) + " behind)" : std::string()) +
        ": Φ's extra parameters are not paid for on this many runs, so the data do not single out the paper's law.";
  else
    s = "No: the paper's Φ term is not supported (" + test + ")" +
        (l.selected.empty() ? std::string(".") : "; the selected law is `" + l.selected + "`.");
  if (l.tested && l.capacity_degenerate)
    s += " In the paper's law (paper-log) the capacity term is degenerate (A = " + fmt("%.3g", l.A) +
         ", α = " + fmt("%.2g", l.alpha) +
         "): the loss does not fall with N except through Φ, so its split into capacity and depth terms means little.";
  return s;
}

std::string controls_sentence(const json& controls) {
  if (controls.is_null())
    return "Not run here: `make controls` (about 35 min on 2 cores) asks whether the penalty survives a tuned "
           "learning rate (SP at its best lr per configuration) and a depth-aware parameterization (CompleteP).";
  std::string s;
  for (const auto& arm : controls.at("arms")) {
    if (!s.empty()) s += " ";
    s += "**" + arm.at("title").get<std::string>() + "**: ";
    std::string per;
    for (const auto& e : arm.at("excess")) {
      if (!per.empty()) per += "; ";
      per += "W = " + std::to_string(e.at("width").get<int>()) + " " + e.at("verdict").get<std::string>();
    }
    s += (per.empty() ? std::string("no depth sweep") : per) + ".";
  }
  return s;
}

StudyAnalysis analyze_study(const json& fit, const std::string& fit_path, std::vector<std::string> summaries,
                            const json& controls) {
  if (summaries.empty() && fit.contains("input") && fit["input"].contains("files"))
    for (const auto& f : fit["input"]["files"]) summaries.push_back(f.get<std::string>());
  if (summaries.empty()) throw Error(located(fit_path, 0, "input.files: no summary.json to analyse"));
  StudyAnalysis a;
  a.runs = read_runs(summaries);
  a.cells = cells_of(a.runs);
  a.spread = pooled_spread(a.cells);
  // the runs the fit kept: with --best-of, the chosen candidates' runs; else all
  std::set<std::string> chosen;
  if (fit.contains("best_of") && fit["best_of"].is_object())
    for (const auto& c : fit["best_of"].value("configurations", json::array()))
      for (const auto& cand : c.at("candidates"))
        if (cand.at("value") == c.at("chosen"))
          for (const auto& id : cand.at("run_ids")) chosen.insert(id.get<std::string>());
  std::vector<Run> kept;
  for (const Run& r : a.runs)
    if (chosen.empty() || chosen.count(r.run_id)) kept.push_back(r);
  a.arm.name = "study";
  a.arm.title = "the study";
  a.arm.selected = cells_of(kept);
  a.arm.excess = excess_per_width(a.arm.selected, a.spread);
  judge(a.arm, nullptr);
  std::set<int> widths;
  a.min_depth = a.runs.front().depth;
  for (const Run& r : a.runs) {
    widths.insert(r.width);
    a.min_depth = std::min(a.min_depth, r.depth);
    a.max_depth = std::max(a.max_depth, r.depth);
  }
  a.widths.assign(widths.begin(), widths.end());
  a.arm.law = law_evidence(fit, fit_path, a.widths, a.min_depth);
  a.tokens_per_param = tokens_per_param(a.runs);
  if (a.tokens_per_param < 20)
    a.caveats.push_back("the largest model saw " + fmt("%.2g", a.tokens_per_param) +
                        " tokens per parameter (total, Chinchilla's count; about 20 is compute-optimal): these runs "
                        "are far from converged, so a loss that rises with depth can be slower optimization of deeper "
                        "models rather than the paper's gradient-starvation mechanism; raise TOKENS to tell them apart");
  if (fit.contains("best_of") && fit["best_of"].value("at_edge", 0) > 0)
    a.caveats.push_back("in " + std::to_string(fit["best_of"].value("at_edge", 0)) +
                        " configuration(s) the best learning rate lies at the edge of the sweep: widen it before "
                        "trusting those losses");
  std::string h = "**Is there a depth penalty at this budget?** " +
                  penalty_sentence(a.arm.excess, a.arm.verdicts, a.spread) + "\n\n";
  h += "**Does the paper's law describe it?** " + law_sentence(*a.arm.law) + "\n\n";
  h += "**The controls.** " + controls_sentence(controls) + "\n";
  for (const auto& c : a.caveats) h += "\n**Caveat:** " + c + ".\n";
  a.headline = h;
  return a;
}

json study_json(const StudyAnalysis& a) {
  json j = {{"format", "shapelaw.study"}, {"version", 1}, {"kind", "study"}};
  j["runs"] = a.runs.size();
  j["widths"] = a.widths;
  j["depths"] = {a.min_depth, a.max_depth};
  j["cells"] = json::array();
  for (const auto& c : a.cells) j["cells"].push_back(cell_json(c));
  j["seed_spread"] = spread_json(a.spread);
  j["arm"] = arm_json(a.arm);
  j["tokens_per_param"] = a.tokens_per_param;
  j["caveats"] = a.caveats;
  j["headline"] = a.headline;
  return j;
}

ControlsAnalysis analyze_controls(const std::vector<std::string>& sp, const std::vector<std::string>& completep,
                                  double fixed_lr, const std::map<std::string, json>& fits,
                                  const std::optional<SeedSpread>& spread) {
  ControlsAnalysis a;
  a.fixed_lr = fixed_lr;
  const std::vector<Run> sp_runs = read_runs(sp), cp_runs = read_runs(completep);
  // one run per (parameterization, row, lr, seed): a run trained twice would count as a replicate
  for (const auto* rs : {&sp_runs, &cp_runs})
    for (size_t i = 1; i < rs->size(); ++i) {
      const Run &p = (*rs)[i - 1], &r = (*rs)[i];
      if (p.row == r.row && p.lr == r.lr && p.seed == r.seed && p.width == r.width && p.depth == r.depth)
        throw Error(r.path + " and " + p.path + ": the same run twice (row " + r.row + ", lr " + lr_text(r.lr) +
                    ", seed " + std::to_string(r.seed) + ")");
    }
  a.runs = sp_runs;
  a.runs.insert(a.runs.end(), cp_runs.begin(), cp_runs.end());
  const std::vector<Cell> sp_cells = cells_of(sp_runs), cp_cells = cells_of(cp_runs);
  std::vector<Cell> all = sp_cells;
  all.insert(all.end(), cp_cells.begin(), cp_cells.end());
  a.spread = pooled_spread(all);
  if (!a.spread.available && spread) a.spread = *spread;
  // the depth sweeps: widths with three or more rows (the equal-parameter rows are one per width)
  std::map<int, std::set<std::string>> rows_at;
  for (const Run& r : a.runs) rows_at[r.width].insert(r.row);
  auto in_sweep = [&](int w) { return rows_at[w].size() > 2; };
  Arm fixed;
  fixed.name = "sp-fixed";
  fixed.title = "SP, lr " + lr_text(fixed_lr);
  for (const Cell& c : sp_cells)
    if (c.lr == fixed_lr) fixed.selected.push_back(c);
  if (fixed.selected.empty()) throw Error("controls: no SP runs at the fixed lr " + lr_text(fixed_lr));
  Arm tuned, cp;
  tuned.name = "sp-tuned";
  tuned.title = "SP, best lr";
  cp.name = "completep";
  cp.title = "CompleteP, best base lr";
  tuned.best = best_lr_per_row(sp_cells);
  cp.best = best_lr_per_row(cp_cells);
  for (const auto& b : tuned.best) tuned.selected.push_back(b.best);
  for (const auto& b : cp.best) cp.selected.push_back(b.best);
  for (Arm* arm : {&fixed, &tuned, &cp}) {
    std::vector<Cell> sweep;
    for (const Cell& c : arm->selected)
      if (in_sweep(c.width)) sweep.push_back(c);
    arm->excess = excess_per_width(sweep, a.spread);
    auto f = fits.find(arm->name);
    if (f != fits.end()) {
      std::set<int> widths;
      int min_depth = 1 << 30;
      for (const Cell& c : arm->selected) {
        widths.insert(c.width);
        min_depth = std::min(min_depth, c.depth);
      }
      arm->law = law_evidence(f->second, arm->name + " fit", {widths.begin(), widths.end()}, min_depth);
    }
  }
  judge(fixed, nullptr);
  judge(tuned, &fixed);
  judge(cp, &fixed);
  a.arms = {fixed, tuned, cp};
  a.tokens_per_param = tokens_per_param(a.runs);
  // equal parameters: the most common 12·D·W² off the depth sweeps (ties: the smaller)
  std::map<double, int> count;
  std::map<std::string, double> row_n;
  for (const Run& r : a.runs)
    if (!in_sweep(r.width) && !row_n.count(r.row)) {
      row_n[r.row] = r.params_12dw2;
      ++count[r.params_12dw2];
    }
  int best = 0;
  for (const auto& [n, c] : count)
    if (c > best) {
      best = c;
      a.equal_params_n = n;
    }
  if (best < 2) a.equal_params_n = 0;
  if (a.equal_params_n > 0)
    for (const Arm& arm : a.arms)
      for (const Cell& c : arm.selected) {
        double n = 0;
        for (const Run& r : a.runs)
          if (r.row == c.row) n = r.params_12dw2;
        if (n >= a.equal_params_n / 1.15 && n <= a.equal_params_n * 1.15) a.equal_params.emplace_back(arm.name, c);
      }
  return a;
}

json controls_json(const ControlsAnalysis& a) {
  json j = {{"format", "shapelaw.study"}, {"version", 1}, {"kind", "controls"}};
  j["runs"] = a.runs.size();
  j["fixed_lr"] = a.fixed_lr;
  j["seed_spread"] = spread_json(a.spread);
  j["tokens_per_param"] = a.tokens_per_param;
  j["arms"] = json::array();
  for (const auto& arm : a.arms) j["arms"].push_back(arm_json(arm));
  j["equal_params"] = {{"params_12dw2", a.equal_params_n}, {"cells", json::array()}};
  for (const auto& [arm, c] : a.equal_params) {
    json cj = cell_json(c);
    cj["arm"] = arm;
    j["equal_params"]["cells"].push_back(cj);
  }
  j["verdict"] = controls_sentence(j);
  return j;
}

}  // namespace shapelaw::study
