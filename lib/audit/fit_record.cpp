#include "audit/fit_record.h"

#include <array>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "audit/numbers.h"
#include "fit/capacity.h"
#include "records/versioned_json.h"
#include "util/error.h"

namespace shapelaw::audit {
namespace {

using nlohmann::json;

using records::fail_field;
[[noreturn]] void fail(const std::string& path, const std::string& field, const std::string& what) {
  fail_field(path, field, what);
}

std::optional<Interval> interval_at(const std::string& path, const json& range, const char* key) {
  if (!range.contains(key)) return std::nullopt;
  const json& v = range[key];
  if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_number())
    fail(path, std::string("input.range.") + key, "expected [lo, hi], got " + v.dump());
  return Interval{v[0].get<double>(), v[1].get<double>()};
}

double number_at(const std::string& path, const json& j, const char* key, const std::string& field) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) fail(path, field, "missing");
  if (!it->is_number()) fail(path, field, "expected a number, got " + it->dump());
  return it->get<double>();
}

}  // namespace

Law law_from_fit_file(const std::string& path, const std::string& model_name) {
  const json root = records::read_versioned_json(path, "shapelaw.fit", 1);
  if (!root.contains("models") || !root["models"].is_array() || root["models"].empty())
    fail(path, "models", "missing or empty");

  std::string wanted = model_name;
  if (wanted.empty()) {
    // The audit needs a critical depth: prefer the best model that has one.
    for (const char* key : {"selected_phi_model", "selected_model"})
      if (wanted.empty() && root.contains(key) && root[key].is_string()) wanted = root[key].get<std::string>();
    if (wanted.empty())
      fail(path, "selected_model", "no model was selected in this record (name one with --model)");
  }
  const json* model = nullptr;
  std::string names, with_dcrit;
  for (const auto& m : root["models"]) {
    std::string n = m.value("name", std::string());
    names += (names.empty() ? "" : ", ") + n;
    if (m.contains("dcrit") && m["dcrit"].is_object()) with_dcrit += (with_dcrit.empty() ? "" : ", ") + n;
    if (n == wanted) model = &m;
  }
  if (!model) fail(path, "models", "no model named '" + wanted + "' (available: " + names + ")");
  const json& m = *model;
  if (!m.contains("dcrit") || !m["dcrit"].is_object())
    fail(path, "models[" + wanted + "].dcrit",
         "absent: this model has no critical depth (no Φ term); models with D_crit: " +
             (with_dcrit.empty() ? std::string("none") : with_dcrit) + " (choose with --model)");

  Law law;
  law.name = path + ":" + wanted;
  const json& dc = m["dcrit"];
  std::string form = dc.value("form", std::string());
  const std::string dfield = "models[" + wanted + "].dcrit";
  LawParams& p = law.point;
  if (form == "log") {
    p.form = LawParams::Form::log;
    p.kappa = number_at(path, dc, "kappa", dfield + ".kappa");
  } else if (form == "power") {
    p.form = LawParams::Form::power;
    p.c = number_at(path, dc, "c", dfield + ".c");
    p.a = number_at(path, dc, "a", dfield + ".a");
  } else {
    fail(path, dfield + ".form", "expected \"log\" or \"power\", got " + (dc.contains("form") ? dc["form"].dump() : "nothing"));
  }

  // Named parameter estimates.
  std::map<std::string, double> est;
  if (m.contains("params") && m["params"].is_object()) {
    for (auto it = m["params"].begin(); it != m["params"].end(); ++it) {
      const json& v = it.value();
      if (v.is_object() && v.contains("estimate") && v["estimate"].is_number())
        est[it.key()] = v["estimate"].get<double>();
      else if (v.is_number())
        est[it.key()] = v.get<double>();
    }
  }
  auto get = [&](const std::map<std::string, double>& from, std::initializer_list<const char*> keys) -> std::optional<double> {
    for (const char* k : keys)
      if (auto it = from.find(k); it != from.end()) return it->second;
    return std::nullopt;
  };
  std::string phi_mode;
  for (const json* opts : std::array<const json*, 2>{&root, &m})
    if (opts->contains("options") && (*opts)["options"].is_object() && (*opts)["options"].contains("phi") &&
        (*opts)["options"]["phi"].is_string())
      phi_mode = (*opts)["options"]["phi"].get<std::string>();
  if (dc.contains("phi") && dc["phi"].is_string()) phi_mode = dc["phi"].get<std::string>();
  // the N the fit used: n_resolved (what --n auto chose), else the n_source asked for
  for (const json* opts : std::array<const json*, 2>{&root, &m})
    for (const char* key : {"n_source", "n_resolved"})
      if (opts->contains("options") && (*opts)["options"].is_object() && (*opts)["options"].contains(key) &&
          (*opts)["options"][key].is_string())
        law.n_source = (*opts)["options"][key].get<std::string>();
  if (law.n_source != "12dw2" && law.n_source != "nonembedding" && law.n_source != "auto" && law.n_source != "total")
    fail(path, "options.n_source", "expected 12dw2, nonembedding, auto or total, got \"" + law.n_source + "\"");
  if (!phi_mode.empty() && phi_mode != "relative" && phi_mode != "absolute")
    fail(path, "options.phi", "expected \"absolute\" or \"relative\", got \"" + phi_mode + "\"");

  auto fill = [&](LawParams& q, const std::map<std::string, double>& values) {
    if (q.form == LawParams::Form::log) {
      if (auto v = get(values, {"kappa"})) q.kappa = *v;
    } else {
      if (auto v = get(values, {"c", "c_dcrit"})) q.c = *v;
      if (auto v = get(values, {"a", "a_dcrit"})) q.a = *v;
    }
    auto g = get(values, {"gamma"}), mu = get(values, {"mu"});
    if (g && mu) {
      q.has_phi = true;
      q.gamma = *g;
      q.mu = *mu;
    }
    // a Box-Cox law (fit/laws.h: s, L1, alpha where T is constant) gives A = s/alpha, which is
    // ±inf at alpha = 0; ΔL at equal tokens needs only A*N^-alpha differences, so L1 is not read
    auto A = get(values, {"A"}), alpha = get(values, {"alpha"}), s = get(values, {"s"});
    if (alpha && (A || s)) {
      q.has_capacity = true;
      q.A = A ? *A : fit::capacity_A(*s, *alpha);
      q.alpha = *alpha;
    }
    q.phi_relative = phi_mode == "relative";
  };
  fill(p, est);

  // Bootstrap draws, rows in param_names order; parameters absent from param_names keep
  // their point estimates.
  if (m.contains("bootstrap_draws") && m["bootstrap_draws"].is_array() && !m["bootstrap_draws"].empty()) {
    if (!m.contains("param_names") || !m["param_names"].is_array())
      fail(path, "models[" + wanted + "].param_names", "missing (needed to read bootstrap_draws)");
    std::vector<std::string> pn;
    for (const auto& n : m["param_names"]) {
      if (!n.is_string()) fail(path, "models[" + wanted + "].param_names", "expected strings");
      pn.push_back(n.get<std::string>());
    }
    size_t row_index = 0;
    for (const auto& row : m["bootstrap_draws"]) {
      if (!row.is_array() || row.size() != pn.size())
        fail(path, "models[" + wanted + "].bootstrap_draws[" + std::to_string(row_index) + "]",
             "expected " + std::to_string(pn.size()) + " numbers (param_names order)");
      std::map<std::string, double> values = est;
      bool ok = true;
      for (size_t i = 0; i < pn.size(); ++i) {
        if (!row[i].is_number()) {
          ok = false;  // a failed resample (null): skipped
          break;
        }
        values[pn[i]] = row[i].get<double>();
      }
      ++row_index;
      if (!ok) continue;
      LawParams q = p;
      fill(q, values);
      law.draws.push_back(q);
    }
    law.ci_label = "bootstrap_draws of " + path + " (" + std::to_string(law.draws.size()) + " draws)";
  }
  law.description = "D_crit = " + describe(p) + " (" + wanted + " from " + path + ")";
  if (root.contains("input") && root["input"].is_object() && root["input"].contains("range")) {
    const json& r = root["input"]["range"];
    if (!r.is_object()) fail(path, "input.range", "expected an object");
    law.range = DataRange{interval_at(path, r, "N"), interval_at(path, r, "T"), interval_at(path, r, "D"),
                          interval_at(path, r, "W")};
  }
  // loss not falling with N (s = A*alpha <= 0): a redesign's ΔL says nothing (B/T^δ cancels)
  if (p.has_capacity && fit::capacity_not_falling(est.count("s") ? est.at("s") : fit::capacity_slope(p.A, p.alpha)))
    law.loss_refused = "the fitted capacity term A/N^alpha has " +
                       (p.A <= 0 ? "A = " + fixed(p.A, 4) + " <= 0" : "alpha = " + fixed(p.alpha, 4) + " <= 0 (A = " + fixed(p.A, 4) + ")") +
                       ": loss does not fall with N (s = A*alpha <= 0), so its loss differences are not predictions "
                       "(--allow-degenerate-law computes them anyway)";
  if (!p.has_phi) law.loss_note = "no loss prediction: the model has no γ/μ estimates";
  else if (p.has_capacity)
    law.loss_note = "Φ and the capacity term A/N^α from the fit with N as it was fitted (n_source " + law.n_source +
                    "); tokens equal, so B/T^δ cancels";
  else law.loss_note = "Φ only (the model has no A/α estimates)";
  if (m.contains("not_identifiable") && m["not_identifiable"].is_array() && !m["not_identifiable"].empty())
    law.loss_note += "; not identifiable in the fit: " + m["not_identifiable"].dump();
  if (p.phi_relative) law.loss_note += "; Φ relative (divided by D_crit)";
  return law;
}

}  // namespace shapelaw::audit
