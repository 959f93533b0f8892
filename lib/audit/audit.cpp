#include "audit/audit.h"

#include <cmath>
#include <limits>

#include "audit/numbers.h"

namespace shapelaw::audit {

AuditRow audit_model(const ModelEntry& model, const Law& law, const AuditOptions& o) {
  AuditRow r;
  r.model = model;
  const Arch& a = model.arch;
  r.count = count_params(a);
  if (model.stated_params > 0) r.count_diff = model.stated_params / static_cast<double>(r.count.total) - 1.0;
  const double D = static_cast<double>(a.depth), W = static_cast<double>(a.width);
  r.dcrit = dcrit(law.point, W);
  r.ratio = D / r.dcrit;
  r.dcrit_ci = draw_interval(law, [&](const LawParams& p) { return dcrit(p, W); });
  r.ratio_ci = draw_interval(law, [&](const LawParams& p) { return D / dcrit(p, W); });
  r.verdict = verdict(r.ratio, o.verdict);
  if (r.ratio_ci) r.crossed = thresholds_crossed(*r.ratio_ci, o.verdict);
  double n = o.n_counted ? static_cast<double>(r.count.active_non_embedding) : static_cast<double>(r.count.paper_12DW2);
  r.redesign = redesign(a.depth, r.dcrit, n, o.multiple);
  r.delta_loss = std::numeric_limits<double>::quiet_NaN();
  // N as the law was fitted
  double n_fitted = static_cast<double>(r.count.paper_12DW2);
  if (law.n_source == "nonembedding" || law.n_source == "auto") n_fitted = static_cast<double>(r.count.active_non_embedding);
  else if (law.n_source == "total") n_fitted = static_cast<double>(r.count.active_total);
  if (law.range) {
    auto check = [&](const char* axis, const std::optional<Interval>& in, double v) {
      if (!in || !(v > 0)) return;
      if (v > in->hi * (1 + 1e-9)) r.outside.emplace_back(axis, v / in->hi);
      else if (v < in->lo * (1 - 1e-9)) r.outside.emplace_back(axis, in->lo / v);
    };
    check("N", law.range->N, n_fitted);
    check("W", law.range->W, W);
    check("D", law.range->D, D);
  }
  const bool loss_allowed = law.loss_refused.empty() || o.allow_degenerate;
  if (r.redesign && law.point.has_phi && loss_allowed) {
    const Redesign& rd = *r.redesign;
    // The capacity term uses N as the law was fitted; the redesign changes it by the rounding
    // of W' (and, for total counts, by the embedding at the new width).
    const double scale = rd.n_redesign / rd.n_original;
    double n1 = static_cast<double>(r.count.paper_12DW2), n2 = n1 * scale;
    if (law.n_source == "nonembedding" || law.n_source == "auto") {
      n1 = static_cast<double>(r.count.active_non_embedding);
      n2 = n1 * scale;
    } else if (law.n_source == "total") {
      const double emb1 = static_cast<double>(r.count.embedding);
      const double emb2 = emb1 * static_cast<double>(rd.width) / W;
      n1 = static_cast<double>(r.count.active_total);
      n2 = (n1 - emb1) * scale + emb2;
    }
    auto f = [&](const LawParams& p) {
      return delta_loss(p, D, W, n1, static_cast<double>(rd.depth), static_cast<double>(rd.width), n2);
    };
    r.delta_loss = f(law.point);
    r.delta_ci = draw_interval(law, f);
  }
  return r;
}

Report audit_report(const std::vector<ModelEntry>& models, const Law& law, const AuditOptions& o) {
  Report rep;
  rep.kind = "models";
  rep.header.push_back("Law: " + law.description + ".");
  if (!law.ci_label.empty()) rep.header.push_back("Intervals (95%): " + law.ci_label + ".");
  rep.meta["dcrit_only"] = o.dcrit_only;
  if (o.dcrit_only)
    rep.header.push_back("D_crit only (--dcrit-only): no verdict, redesign or ΔL is derived from this law.");
  else
    rep.header.push_back("Verdict on r = D/D_crit: r ≤ 1 within D_crit; 1 < r ≤ " + fixed(o.verdict.near, 2) +
                       " near D_crit; " + fixed(o.verdict.near, 2) + " < r ≤ " + fixed(o.verdict.far, 2) +
                       " over-deep; r > " + fixed(o.verdict.far, 2) + " far over-deep.");
  if (!o.dcrit_only)
    rep.header.push_back(std::string("Redesign: D' = round(D_crit), W' from N = 12·D'·W'² rounded to a multiple of ") +
                       std::to_string(o.multiple) + ", N = " +
                       (o.n_counted ? "counted non-embedding parameters (active for MoE)" : "12·D·W² of the original") +
                       "; ΔL = L(redesign) − L(original) at equal tokens: " + law.loss_note + ".");
  rep.meta["law"] = law.name;
  rep.meta["law_description"] = law.description;
  rep.meta["ci"] = law.ci_label;
  rep.meta["loss_note"] = law.loss_note;
  rep.meta["thresholds"] = {{"near", o.verdict.near}, {"far", o.verdict.far}};
  rep.meta["redesign_n"] = o.n_counted ? "counted" : "paper_12DW2";
  rep.meta["redesign_multiple"] = o.multiple;
  rep.meta["tolerance"] = o.tolerance;
  if (law.range) {
    nlohmann::ordered_json rj = nlohmann::ordered_json::object();
    for (auto [axis, in] : {std::pair<const char*, const std::optional<Interval>*>{"N", &law.range->N},
                            {"T", &law.range->T}, {"D", &law.range->D}, {"W", &law.range->W}})
      if (*in) rj[axis] = {(*in)->lo, (*in)->hi};
    rep.meta["law_range"] = rj;
    std::string text;
    for (auto it = rj.begin(); it != rj.end(); ++it)
      text += (text.empty() ? "" : ", ") + it.key() + " " + human_count(it.value()[0].get<double>()) + "–" +
              human_count(it.value()[1].get<double>());
    rep.header.push_back("The law was fitted on " + text + "; rows outside that range are extrapolations of it (column "
                         "\"outside the fit's data\").");
  }
  rep.meta["loss_refused"] = law.loss_refused.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(law.loss_refused);
  if (!law.loss_refused.empty() && !o.dcrit_only)
    rep.warnings.push_back(o.allow_degenerate ? "ΔL computed although " + law.loss_refused.substr(0, law.loss_refused.find(" (--allow")) +
                                                    " (--allow-degenerate-law)"
                                              : "no ΔL: " + law.loss_refused);
  int n_outside = 0;

  // The paper's two forms side by side, to show where the choice of form changes the verdict.
  const Law log_form = builtin_law("paper-log"), tau_form = builtin_law("paper-tau");
  std::vector<std::string> flips;

  ReportTable t;
  t.id = "models";
  t.title = "Depth audit";
  t.columns = {"model", "kind", "D", "W", "params stated", "params counted", "D_crit [95% CI]",
               "D/D_crit [95% CI]", "verdict", "redesign D'×W'", "N'/N", "ΔL nats [95% CI]", "outside the fit's data"};
  if (o.dcrit_only) t.columns = {"model", "kind", "D", "W", "params counted", "D_crit [95% CI]", "outside the fit's data"};
  for (const auto& m : models) {
    AuditRow r = audit_model(m, law, o);
    const Arch& a = m.arch;
    auto opt = [](const std::optional<Interval>& i, bool lo) -> std::optional<double> {
      if (!i) return std::nullopt;
      return lo ? i->lo : i->hi;
    };
    std::string verdict_text = r.verdict + " (" + fixed(r.ratio, 2) + "×)";
    if (!r.crossed.empty()) {
      verdict_text += "; CI crosses";
      for (double x : r.crossed) verdict_text += " " + fixed(x, 2);
    }
    std::string stated = m.stated_params > 0 ? human_count(m.stated_params) : "—";
    std::string counted = human_count(static_cast<double>(r.count.total));
    if (a.is_moe()) {
      if (m.stated_active > 0) stated += " (" + human_count(m.stated_active) + " active)";
      counted += " (" + human_count(static_cast<double>(r.count.active_total)) + " active)";
    }
    std::string rd = "—", nratio = "—", dl = "—";
    if (r.redesign) {
      rd = std::to_string(r.redesign->depth) + "×" + std::to_string(r.redesign->width);
      nratio = fixed(r.redesign->n_redesign / r.redesign->n_original, 3);
      if (std::isfinite(r.delta_loss)) dl = with_ci(r.delta_loss, opt(r.delta_ci, true), opt(r.delta_ci, false), 3);
      else if (!law.loss_refused.empty() && !o.allow_degenerate) dl = "refused (A ≤ 0)";
    }
    nlohmann::ordered_json j;
    j["model"] = a.name;
    j["origin"] = m.origin;
    j["kind"] = m.kind;
    j["depth"] = a.depth;
    j["width"] = a.width;
    j["params_stated"] = m.stated_params > 0 ? nlohmann::ordered_json(m.stated_params) : nlohmann::ordered_json();
    j["params_counted"] = r.count.total;
    j["params_non_embedding"] = r.count.non_embedding;
    j["params_active"] = r.count.active_total;
    j["params_12DW2"] = r.count.paper_12DW2;
    j["params_stated_vs_counted"] = m.stated_params > 0 ? nlohmann::ordered_json(r.count_diff) : nlohmann::ordered_json();
    j["dcrit"] = r.dcrit;
    j["dcrit_ci95"] = r.dcrit_ci ? nlohmann::ordered_json({r.dcrit_ci->lo, r.dcrit_ci->hi}) : nlohmann::ordered_json();
    j["ratio"] = r.ratio;
    j["ratio_ci95"] = r.ratio_ci ? nlohmann::ordered_json({r.ratio_ci->lo, r.ratio_ci->hi}) : nlohmann::ordered_json();
    j["verdict"] = r.verdict;
    j["verdict_ci_crosses"] = r.crossed;
    if (r.redesign) {
      j["redesign"] = {{"depth", r.redesign->depth},
                       {"width", r.redesign->width},
                       {"n_original", r.redesign->n_original},
                       {"n_redesign", r.redesign->n_redesign}};
      j["delta_loss"] = std::isfinite(r.delta_loss) ? nlohmann::ordered_json(r.delta_loss) : nlohmann::ordered_json();
      j["delta_loss_ci95"] =
          r.delta_ci ? nlohmann::ordered_json({r.delta_ci->lo, r.delta_ci->hi}) : nlohmann::ordered_json();
      if (!law.loss_refused.empty() && !o.allow_degenerate) j["delta_loss_refused"] = law.loss_refused;
    } else {
      j["redesign"] = nullptr;
      j["delta_loss"] = nullptr;
      j["delta_loss_ci95"] = nullptr;
    }
    const double dlog = dcrit(log_form.point, static_cast<double>(a.width)), dtau = dcrit(tau_form.point, static_cast<double>(a.width));
    j["dcrit_paper_log"] = dlog;
    j["dcrit_paper_tau"] = dtau;
    j["verdict_paper_log"] = verdict(a.depth / dlog, o.verdict);
    j["verdict_paper_tau"] = verdict(a.depth / dtau, o.verdict);
    if (j["verdict_paper_log"] != j["verdict_paper_tau"])
      flips.push_back(a.name + " (" + fixed(dlog, 1) + " vs " + fixed(dtau, 1) + ": " + j["verdict_paper_log"].get<std::string>() +
                      " vs " + j["verdict_paper_tau"].get<std::string>() + ")");
    j["source"] = m.source_arch;
    std::string outside = law.range ? "inside" : "—";
    if (law.range) {
      nlohmann::ordered_json ex = nlohmann::ordered_json::object();
      for (const auto& [axis, factor] : r.outside) ex[axis] = factor;
      j["extrapolation"] = r.outside.empty() ? nlohmann::ordered_json() : ex;
      if (!r.outside.empty()) {
        ++n_outside;
        outside.clear();
        for (const auto& [axis, factor] : r.outside)
          outside += (outside.empty() ? "" : ", ") + axis + " ×" + (factor < 100 ? fixed(factor, 1) : human_count(factor));
        outside = "extrapolated: " + outside;
      }
    }
    const std::string dcrit_text = with_ci(r.dcrit, opt(r.dcrit_ci, true), opt(r.dcrit_ci, false), 1);
    if (o.dcrit_only) {
      for (const char* derived : {"ratio", "ratio_ci95", "verdict", "verdict_ci_crosses", "redesign", "delta_loss",
                                  "delta_loss_ci95", "delta_loss_refused", "dcrit_paper_log", "dcrit_paper_tau",
                                  "verdict_paper_log", "verdict_paper_tau"})
        j.erase(derived);
      t.add({a.name, m.kind, std::to_string(a.depth), std::to_string(a.width), counted, dcrit_text, outside},
            std::move(j));
    } else {
      t.add({a.name, m.kind, std::to_string(a.depth), std::to_string(a.width), stated, counted, dcrit_text,
             with_ci(r.ratio, opt(r.ratio_ci, true), opt(r.ratio_ci, false), 2), verdict_text, rd, nratio, dl, outside},
            std::move(j));
    }
    // the count checks belong to the full audit (the paper-constants table shows them)
    if (!o.dcrit_only && m.stated_params > 0 && std::fabs(r.count_diff) > o.tolerance)
      t.notes.push_back(a.name + ": stated " + human_count(m.stated_params) + " vs counted " +
                        human_count(static_cast<double>(r.count.total)) + " (" + fixed(100 * r.count_diff, 1) + "%)" +
                        (m.count_note.empty() ? "" : ": " + m.count_note));
    if (!o.dcrit_only && a.is_moe() && m.stated_active > 0) {
      double da = m.stated_active / static_cast<double>(r.count.active_total) - 1.0;
      if (std::fabs(da) > o.tolerance)
        t.notes.push_back(a.name + ": stated " + human_count(m.stated_active) + " active vs counted " +
                          human_count(static_cast<double>(r.count.active_total)) + " (" + fixed(100 * da, 1) + "%)");
    }
    if (a.is_moe() && r.redesign && !o.dcrit_only)
      t.notes.push_back(a.name + ": MoE; the redesign keeps " +
                        std::string(o.n_counted ? "the active non-embedding parameters" : "12·D·W² (the dense trunk)") +
                        " and ignores the experts");
  }
  if (!models.empty() && !o.dcrit_only)
    t.notes.push_back(
        "The paper's two forms (D_crit = 2.43·ln W vs τ = 2.06·W^0.44) give different verdicts for " +
        std::to_string(flips.size()) + " of " + std::to_string(models.size()) + " models" +
        (flips.empty() ? std::string(".") : ": " + [&] {
          std::string x;
          for (const auto& f : flips) x += (x.empty() ? "" : "; ") + f;
          return x;
        }() + ".") +
        " JSON rows carry dcrit_paper_log/dcrit_paper_tau and both verdicts; `audit laws` tabulates the forms.");
  if (n_outside > 0)
    rep.warnings.push_back(std::to_string(n_outside) + " of " + std::to_string(models.size()) +
                           " models lie outside the data the law was fitted on: their D_crit" +
                           (o.dcrit_only ? std::string("") : ", verdict and redesign") +
                           " extrapolate the fitted law (column \"outside the fit's data\" says by how far)");
  rep.tables.push_back(std::move(t));
  return rep;
}

}  // namespace shapelaw::audit
