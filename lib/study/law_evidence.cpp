#include "study/law_evidence.h"

#include <cmath>

#include "util/error.h"

namespace shapelaw::study {

namespace {
const nlohmann::json* model_named(const nlohmann::json& fit, const std::string& name) {
  if (!fit.contains("models") || !fit["models"].is_array()) return nullptr;
  for (const auto& m : fit["models"])
    if (m.value("name", std::string()) == name) return &m;
  return nullptr;
}
double estimate(const nlohmann::json& m, const char* p, double fallback) {
  if (!m.contains("params") || !m["params"].contains(p)) return fallback;
  const auto& q = m["params"][p];
  return q.contains("estimate") && q["estimate"].is_number() ? q["estimate"].get<double>() : fallback;
}
}  // namespace

LawEvidence law_evidence(const nlohmann::json& fit, const std::string& path, const std::vector<int>& widths,
                         int min_depth) {
  if (!fit.is_object() || !fit.contains("models") || !fit.contains("comparison"))
    throw Error(located(path, 0, "not a fit-law record (no 'models' or 'comparison')"));
  LawEvidence ev;
  ev.selected = fit.value("selected_model", std::string());
  if (fit.contains("selected_model") && fit["selected_model"].is_null()) ev.selected.clear();
  ev.phi_selected = ev.selected.rfind("paper", 0) == 0;
  const nlohmann::json* lr = nullptr;
  if (fit["comparison"].contains("likelihood_ratio"))
    for (const auto& t : fit["comparison"]["likelihood_ratio"])
      if (t.value("full", std::string()) == "paper-log" && t.value("reduced", std::string()) == "no-phi") {
        lr = &t;
        break;
      }
  ev.criterion = fit["comparison"].value("criterion", std::string());
  if (fit["comparison"].contains("table") && fit["comparison"]["table"].is_array() && !ev.criterion.empty())
    for (const auto& row : fit["comparison"]["table"])
      if (row.value("model", std::string()) == "paper-log" && row.contains("delta_" + ev.criterion) &&
          row["delta_" + ev.criterion].is_number())
        ev.phi_delta = row["delta_" + ev.criterion].get<double>();
  if (lr) {
    ev.tested = true;
    ev.statistic = lr->value("statistic", 0.0);
    ev.df = lr->value("df", 0);
    ev.p_value = lr->value("p_value", 1.0);
    if (lr->contains("converged")) {
      if (!(*lr)["converged"].value("full", true)) ev.flags.push_back("paper-log's best start did not converge");
      if (!(*lr)["converged"].value("reduced", true)) ev.flags.push_back("no-phi's best start did not converge");
    }
  }
  // fit-law's own verdict on the test, in its words (the record's warnings name the pair)
  if (fit.contains("warnings"))
    for (const auto& w : fit["warnings"]) {
      const std::string text = w.is_string() ? w.get<std::string>() : "";
      if (text.find("LR test paper-log vs no-phi") != std::string::npos) ev.flags.push_back(text);
    }
  if (const nlohmann::json* m = model_named(fit, "paper-log")) {
    // paper-log in Box-Cox coordinates (s, L1, alpha: T constant) or the paper's (A, alpha)
    ev.alpha = estimate(*m, "alpha", 1);
    const bool box_cox = m->contains("params") && (*m)["params"].contains("s");
    ev.s = box_cox ? estimate(*m, "s", 1) : fit::capacity_slope(estimate(*m, "A", 1), ev.alpha);
    ev.A = box_cox ? fit::capacity_A(ev.s, ev.alpha) : estimate(*m, "A", 1);
    ev.capacity_degenerate = capacity_is_degenerate(ev.s, ev.alpha);
    ev.kappa = estimate(*m, "kappa", NAN);
    ev.kappa_at_bound = m->contains("params") && (*m)["params"].contains("kappa") &&
                        (*m)["params"]["kappa"].value("at_bound", false);
    if (m->contains("params") && (*m)["params"].contains("kappa")) {
      const auto& ci = (*m)["params"]["kappa"].value("ci95_bootstrap", nlohmann::json());
      if (ci.is_array() && ci.size() == 2 && ci[0].is_number() && ci[1].is_number()) {
        ev.kappa_lo = ci[0].get<double>();
        ev.kappa_hi = ci[1].get<double>();
      }
    }
    // D_crit(W) = κ·ln W at or below the shallowest run at every width (up to the kink's tolerance)
    const auto below_everywhere = [&](double kappa) {
      for (int w : widths)
        if (kappa * std::log(double(w)) > min_depth * (1 + kink_tolerance)) return false;
      return true;
    };
    if (std::isfinite(ev.kappa) && !widths.empty()) {
      ev.dcrit_below_grid = below_everywhere(ev.kappa);
      ev.dcrit_unresolved = !ev.dcrit_below_grid && std::isfinite(ev.kappa_lo) && below_everywhere(ev.kappa_lo);
    }
  }
  return ev;
}

}  // namespace shapelaw::study
