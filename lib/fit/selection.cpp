#include "fit/selection.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fit/stats.h"

namespace shapelaw::fit {

using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

// What makes a law's numbers untrustworthy, "" when nothing.
std::string caveat(const FittedLaw& f) {
  std::string c;
  if (!f.fit.converged) c = "its best fit did not converge (" + f.fit.status + ")";
  if (!f.identification.identified()) {
    std::string names;
    for (const auto& p : f.identification.not_identified) names += (names.empty() ? "" : ", ") + p;
    c += (c.empty() ? "" : "; ") + names + " not identified";
  }
  return c;
}

}  // namespace

Selection select_law(const json& models, const std::map<std::string, FittedLaw>& fitted, size_t n,
                     const std::string& criterion) {
  Selection s;
  json& comp = s.comparison;
  comp["criterion"] = criterion;
  const char* key = criterion == "aic" ? "aic" : criterion == "bic" ? "bic" : criterion == "loo" ? "loo_rmse" : "aicc";
  auto score_of = [&](const json& mj) {
    const json& mt = mj["metrics"];
    return mt.contains(key) && mt[key].is_number() ? mt[key].get<double>() : kInf;
  };
  // rank: score, then fewer free parameters, then catalog order (the order of `models`)
  std::vector<size_t> order(models.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const double sa = score_of(models[a]), sb = score_of(models[b]);
    if (sa != sb) return sa < sb;
    return models[a]["metrics"]["k"].get<int>() < models[b]["metrics"]["k"].get<int>();
  });
  auto law = [&](size_t i) -> const FittedLaw& { return fitted.at(models[i]["name"].get<std::string>()); };
  for (size_t i : order) {
    const std::string name = models[i]["name"];
    if (!std::isfinite(score_of(models[i]))) continue;
    if (s.selected.empty()) s.selected = name;
    if (s.selected_phi.empty() && models[i].contains("dcrit")) s.selected_phi = name;
    if (s.selected_identified.empty() && caveat(law(i)).empty()) s.selected_identified = name;
  }
  json table = json::array();
  double min_aicc = kInf, wsum = 0;
  for (const auto& mj : models) {
    const json& mt = mj["metrics"];
    const FittedLaw& f = fitted.at(mj["name"].get<std::string>());
    table.push_back({{"model", mj["name"]}, {"k", mt["k"]}, {"aicc", mt["aicc"]}, {"aic", mt["aic"]},
                     {"bic", mt["bic"]}, {"r2", mt["r2"]}, {"rmse", mt["rmse"]},
                     {"loo_rmse", mt.value("loo_rmse", json(nullptr))}, {"score", num(score_of(mj))},
                     {"converged", f.fit.converged}, {"identified", f.identification.identified()}});
    if (mt["aicc"].is_number()) min_aicc = std::min(min_aicc, mt["aicc"].get<double>());
  }
  for (auto& t : table)
    if (t["aicc"].is_number()) wsum += std::exp(-0.5 * (t["aicc"].get<double>() - min_aicc));
  for (auto& t : table)
    if (t["aicc"].is_number()) {
      const double d = t["aicc"].get<double>() - min_aicc;
      t["delta_aicc"] = d;
      t["akaike_weight"] = std::exp(-0.5 * d) / wsum;
    }
  comp["table"] = table;

  json caveats = json::array();
  if (!s.selected.empty()) {
    const FittedLaw& best = fitted.at(s.selected);
    const std::string c = caveat(best);
    if (!c.empty()) {
      std::string msg = "selected " + s.selected + " by " + criterion + ", but " + c + ": ";
      msg += s.selected_identified.empty()
                 ? "no fitted law is free of such caveats, so the selection rests on unreliable fits"
                 : "the best law without such caveats is " + s.selected_identified;
      caveats.push_back(msg);
      s.warnings.push_back(msg);
    }
    // a score within rounding of the winner's is a tie, not a decision
    for (size_t q = 1; q < order.size(); ++q) {
      const double a = score_of(models[order[0]]), b = score_of(models[order[q]]);
      if (!(std::isfinite(a) && std::isfinite(b)) || b - a > 1e-6 * std::max(1.0, std::abs(a))) break;
      std::string msg = s.selected + " and " + models[order[q]]["name"].get<std::string>() + " tie on " + criterion +
                        " (difference " + std::to_string(b - a) + "): " + s.selected +
                        " is reported by the tie rule (fewer free parameters, then catalog order)";
      caveats.push_back(msg);
      s.warnings.push_back(msg);
    }
  }
  // likelihood-ratio tests: with Φ against without Φ (nested: γ = 0 removes μ and D_crit)
  json lrts = json::array();
  for (const std::string full : {"paper-log", "paper-power"}) {
    auto a = fitted.find(full), b = fitted.find("no-phi");
    if (a == fitted.end() || b == fitted.end()) continue;
    const double rss1 = a->second.fit.residuals.squaredNorm(), rss0 = b->second.fit.residuals.squaredNorm();
    const int df = a->second.model.n_free() - b->second.model.n_free();
    if (df <= 0) {
      // every parameter of Φ held (--fix): the two laws differ by no free parameter, there is
      // nothing to test (a chi-square with 0 degrees of freedom is no test)
      const std::string msg = "no LR test " + full + " vs no-phi: every parameter of the depth penalty is held (--fix)";
      caveats.push_back(msg);
      s.warnings.push_back(msg);
      continue;
    }
    const double lr = (double)n * std::log(rss0 / rss1);
    json t = {{"full", full}, {"reduced", "no-phi"}, {"statistic", num(lr)}, {"df", df},
              {"p_value", num(chi2_sf(std::max(0.0, lr), df))},
              {"converged", {{"full", a->second.fit.converged}, {"reduced", b->second.fit.converged}}},
              {"note", "Gaussian LR n*ln(RSS0/RSS1) in the fitting space; D_crit and mu vanish under the null "
                       "(Davies' problem), so the chi-square p-value is approximate (anti-conservative)"}};
    if (!a->second.fit.converged || !b->second.fit.converged) {
      const std::string msg = "LR test " + full + " vs no-phi: " +
                              (!a->second.fit.converged ? full : std::string("no-phi")) +
                              " did not converge, so the statistic compares an unfinished fit: do not use it "
                              "(raise --max-iterations)";
      t["warning"] = msg;
      s.warnings.push_back(msg);
    }
    lrts.push_back(t);
  }
  comp["likelihood_ratio"] = lrts;
  comp["caveats"] = caveats;
  return s;
}

}  // namespace shapelaw::fit
