#include "fit/report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "util/csv.h"
#include "util/error.h"

namespace shapelaw::fit {

using nlohmann::json;

std::string format_double(double v) {
  if (!std::isfinite(v)) return "";
  char buf[64];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

namespace {

std::string g(const json& v, int prec = 4) {
  if (!v.is_number()) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", prec, v.get<double>());
  return buf;
}
std::string ci(const json& v, int prec = 4) {
  if (!v.is_array() || v.size() != 2 || !v[0].is_number()) return "-";
  return "[" + g(v[0], prec) + ", " + g(v[1], prec) + "]";
}

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string render(bool markdown) const {
    std::vector<size_t> w(header.size());
    for (size_t c = 0; c < header.size(); ++c) {
      w[c] = header[c].size();
      for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
    }
    std::ostringstream os;
    auto line = [&](const std::vector<std::string>& cells) {
      if (markdown) os << "| ";
      for (size_t c = 0; c < cells.size(); ++c) {
        os << cells[c] << std::string(w[c] - cells[c].size(), ' ');
        if (c + 1 < cells.size()) os << (markdown ? " | " : "  ");
      }
      os << (markdown ? " |\n" : "\n");
    };
    line(header);
    if (markdown) {
      os << "|";
      for (size_t c = 0; c < header.size(); ++c) os << " " << std::string(std::max<size_t>(3, w[c]), '-') << " |";
      os << "\n";
    } else {
      std::vector<std::string> dashes;
      for (size_t c = 0; c < header.size(); ++c) dashes.push_back(std::string(w[c], '-'));
      line(dashes);
    }
    for (const auto& r : rows) line(r);
    return os.str();
  }
};

std::string render_text(const json& rec, bool md) {
  std::ostringstream os;
  const json& opt = rec["options"];
  os << (md ? "## fit-law\n\n" : "fit-law: ") << rec["input"]["rows"] << " rows, objective "
     << opt["objective"].get<std::string>()
     << (opt["objective"] == "huber" ? "(" + g(opt["huber_delta"]) + ")" : std::string()) << " in "
     << opt["space"].get<std::string>() << " space, phi " << opt["phi"].get<std::string>() << ", bootstrap B="
     << opt["bootstrap"] << ", seed " << rec["seed"] << "\n";
  if (opt.contains("n_note")) os << (md ? "\n" : "") << "N: " << opt["n_note"].get<std::string>() << "\n";
  if (opt.value("resample_unit", "") == "run")
    os << (md ? "\n" : "") << "resampling: rows that share a run are checkpoints of one run, so the bootstrap resamples "
       << "and leave-one-out leaves out whole runs (" << rec["input"]["groups"] << " runs)\n";
  if (rec["input"].contains("tokens_note")) os << (md ? "\n" : "") << "note: " << rec["input"]["tokens_note"].get<std::string>() << "\n";
  if (rec.contains("best_of")) {
    const json& b = rec["best_of"];
    os << (md ? "\n" : "") << "best of " << b["key"].get<std::string>() << ": " << b["configurations"].size()
       << " configurations, " << b["rows_kept"] << " of " << b["rows_in"] << " rows kept, " << b["at_edge"]
       << " with the best value at the edge of the sweep, " << b["single_candidate"] << " with one value only\n";
    if (md) os << "\n";
    for (const auto& c : b["configurations"]) {
      std::string shape, values;
      for (auto it = c["shape"].begin(); it != c["shape"].end(); ++it) shape += (shape.empty() ? "" : " ") + it.key() + "=" + g(it.value(), 6);
      for (const auto& cand : c["candidates"])
        values += (values.empty() ? "" : ", ") + g(cand["value"], 4) + ": " + g(cand["mean_val_loss"], 5) + " (" +
                  std::to_string(cand["n_runs"].get<int>()) + ")";
      os << (md ? "- " : "  ") << shape << ": " << values << " -> " << g(c["chosen"], 4)
         << (c["edge"].is_string() ? " (at the " + c["edge"].get<std::string>() + " edge: widen the sweep)" : "")
         << (c["single_candidate"] == true ? " (one value: not a sweep)" : "") << "\n";
    }
  }
  for (const auto& w : rec["input"]["warnings"]) os << "warning: " << w.get<std::string>() << "\n";
  if (rec.contains("replicates")) {
    const json& r = rec["replicates"];
    os << (md ? "\n" : "") << "replicates: " << r["configurations"] << " configurations run more than once ("
       << r["rows"] << " rows): spread between replicates SD " << g(r["sd"], 3) << " (pooled, df " << r["df"] << ")";
    if (r.contains("median_row_se"))
      os << ", " << g(r["sd_over_median_row_se"], 3) << "x the rows' median standard error " << g(r["median_row_se"], 3);
    os << "\n";
  }
  for (const auto& m : rec["models"]) {
    os << "\n" << (md ? "### " : "== ") << m["name"].get<std::string>() << (md ? "\n\n`" : ": ")
       << m["formula"].get<std::string>() << (md ? "`\n\n" : "\n");
    Table t;
    t.header = {"param", "estimate", "se", "95% CI (bootstrap)", "95% CI (Jacobian)", "95% CI (profile)", "flags"};
    for (const auto& name : m["param_names"]) {
      const json& p = m["params"][name.get<std::string>()];
      std::string flags;
      if (p.value("fixed", false)) flags += "fixed ";
      if (p.value("at_bound", false)) flags += "at-bound ";
      if (p.value("non_positive", false)) flags += "non-positive ";
      for (const auto& wk : m["weakly_identified"])
        if (wk == name) flags += "weakly-identified ";
      std::string prof = p.contains("ci95_profile") ? ci(p["ci95_profile"]) : "-";
      if (p.contains("ci95_profile_open")) prof += "*";
      t.rows.push_back({name.get<std::string>(), g(p["estimate"], 6), g(p["se"], 3), ci(p["ci95_bootstrap"]),
                        ci(p["ci95_jacobian"]), prof, flags});
    }
    os << t.render(md);
    if (!m["not_identifiable"].empty()) {
      os << (md ? "\n" : "") << "not identifiable: ";
      for (size_t i = 0; i < m["not_identifiable"].size(); ++i) os << (i ? ", " : "") << m["not_identifiable"][i].get<std::string>();
      os << "\n";
    }
    for (const auto& note : m["notes"]) os << "note: " << note.get<std::string>() << "\n";
    const json& mt = m["metrics"];
    const json& f = m["fit"];
    os << (md ? "\n" : "") << "R2 " << g(mt["r2"]) << ", RMSE " << g(mt["rmse"]) << ", LOO-RMSE "
       << g(mt.value("loo_rmse", json(nullptr))) << ", AICc " << g(mt["aicc"], 5) << ", BIC " << g(mt["bic"], 5)
       << "; " << f["starts"] << " starts, " << f["converged_starts"] << " converged, " << f["starts_at_best"]
       << " at best, " << f["distinct_optima"] << " distinct optima; bootstrap " << m["bootstrap"]["used"] << "/"
       << m["bootstrap"]["requested"] << "\n";
    if (m.contains("lack_of_fit")) {
      const json& l = m["lack_of_fit"];
      os << (md ? "\n" : "") << "lack of fit against the replicates' spread: ";
      if (l.contains("f"))
        os << "F(" << l["df_lof"] << ", " << l["df_pe"] << ") = " << g(l["f"], 3) << ", p " << g(l["p_value"], 3)
           << (opt["objective"] == "huber" ? " (approximate: Huber objective)" : "") << "\n";
      else
        os << "not tested (" << l["reason"].get<std::string>() << ")\n";
    }
    if (m.contains("extrapolation") && m["extrapolation"].contains("rmse")) {
      const json& ex = m["extrapolation"];
      os << (md ? "\n" : "") << "extrapolation: fit on " << ex["n_train"] << " smaller, RMSE on the largest " << ex["n_test"]
         << " = " << g(ex["rmse"]) << " (mean error " << g(ex["mean_error"]) << ")\n";
    }
    if (m.contains("dcrit")) {
      os << (md ? "\n" : "") << "D_crit(W):";
      for (const auto& a : m["dcrit"]["at_widths"])
        os << " " << g(a["width"], 6) << "->" << g(a["estimate"], 3) << ci(a["ci95_bootstrap"], 3);
      os << "\n";
    }
    if (m.contains("derived")) {  // the law's own (kaplan's Nc, a Box-Cox law's A and constant)
      std::string line;
      bool flat = false;
      for (auto it = m["derived"].begin(); it != m["derived"].end(); ++it)
        if (it.value().contains("estimate")) {
          line += " " + it.key() + " = " + g(it.value()["estimate"], 6) + ci(it.value()["ci95_bootstrap"], 3);
          flat = flat || it.value().value("alpha_near_zero", false);
        }
      if (!line.empty())
        os << (md ? "\n" : "") << "derived:" << line << (flat ? " (alpha ~ 0: not estimates, see the notes)" : "") << "\n";
    }
    if (m.contains("derived") && m["derived"].contains("compute_optimal")) {
      const json& co = m["derived"]["compute_optimal"];
      const bool with_shapes = co.value("shapes", true);
      if (co["available"] == true && !co["slopes"]["N"].is_number()) {
        os << (md ? "\n" : "") << "compute-optimal: no interior optimum (" << co.value("reason", std::string()) << ")\n";
      } else if (co["available"] == true) {
        const json& s = co["slopes"];
        auto boot = [&](const char* k) {
          return co.contains("slopes_bootstrap") ? ci(co["slopes_bootstrap"][k]["ci95_bootstrap"], 3) : std::string();
        };
        os << (md ? "\n" : "") << "compute-optimal: N* ~ C^" << g(s["N"], 3) << boot("N") << ", T* ~ C^" << g(s["T"], 3)
           << boot("T");
        if (!with_shapes)
          os << " (the data has no depth and width: the optimal shape is not determined)";
        else if (s["D_deepest"].is_number())
          os << ", deepest D* ~ C^" << g(s["D_deepest"], 3) << boot("D_deepest") << ", W* ~ C^"
             << g(s["W_at_D_deepest"], 3) << boot("W_at_D_deepest")
             << (co["shape_unique"] == true ? "" : " (shape not unique: a range of depths is equally optimal)");
        else
          os << "; D* and W* not determined (every depth in the search range is equally optimal)";
        os << "\n";
      } else {
        os << (md ? "\n" : "") << "compute-optimal: not available (" << co.value("reason", std::string()) << ")\n";
      }
    }
  }
  for (const auto& s : rec["skipped_models"])
    os << "\nskipped " << s["name"].get<std::string>() << ": " << s["reason"].get<std::string>() << "\n";
  os << "\n" << (md ? "### comparison\n\n" : "== comparison\n");
  Table t;
  t.header = {"model", "k", "R2", "RMSE", "LOO-RMSE", "AICc", "dAICc", "weight", "BIC", "caveat"};
  for (const auto& r : rec["comparison"]["table"]) {
    std::string caveat;
    if (r.value("converged", true) == false) caveat += "not converged ";
    if (r.value("identified", true) == false) caveat += "not identified";
    t.rows.push_back({r["model"].get<std::string>(), g(r["k"]), g(r["r2"]), g(r["rmse"]), g(r["loo_rmse"]),
                      g(r["aicc"], 5), g(r.value("delta_aicc", json(nullptr)), 3),
                      g(r.value("akaike_weight", json(nullptr)), 3), g(r["bic"], 5), caveat});
  }
  os << t.render(md);
  for (const auto& l : rec["comparison"]["likelihood_ratio"]) {
    os << (md ? "\n" : "") << "LR test " << l["full"].get<std::string>() << " vs " << l["reduced"].get<std::string>()
       << ": statistic " << g(l["statistic"]) << ", df " << l["df"] << ", p " << g(l["p_value"], 3) << " (approximate)\n";
    if (l.contains("warning")) os << "warning: " << l["warning"].get<std::string>() << "\n";
  }
  os << (md ? "\n" : "") << "selected (" << rec["comparison"]["criterion"].get<std::string>()
     << "): " << rec["selected_model"].get<std::string>() << "\n";
  if (rec.contains("warnings") && !rec["warnings"].empty()) {
    os << "\n" << (md ? "### warnings\n\n" : "== warnings\n");
    for (const auto& w : rec["warnings"]) os << (md ? "- " : "") << w.get<std::string>() << "\n";
  }
  return os.str();
}

std::string num_text(const json& v) { return v.is_number() ? format_double(v.get<double>()) : ""; }
std::string text_of(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.is_null() ? "" : v.dump();
}

// fit-law --format csv: one row per number or statement of the record (docs/formats.md
// "stdout"): model,kind,name,estimate,se,ci95_lo,ci95_hi,ci95_jacobian_lo,ci95_jacobian_hi,text
struct CsvOut {
  std::ostringstream os;
  void row(const std::string& model, const char* kind, const std::string& name, const json& estimate = nullptr,
           const json& se = nullptr, const json& ci = nullptr, const json& cij = nullptr, const std::string& text = "") {
    auto lo = [](const json& c) { return c.is_array() && c.size() == 2 ? num_text(c[0]) : std::string(); };
    auto hi = [](const json& c) { return c.is_array() && c.size() == 2 ? num_text(c[1]) : std::string(); };
    os << csv_row({model, kind, name, estimate.is_number() ? num_text(estimate) : std::string(), num_text(se), lo(ci),
                   hi(ci), lo(cij), hi(cij), estimate.is_number() ? text : (text.empty() ? text_of(estimate) : text)});
  }
};

std::string render_csv(const json& rec) {
  CsvOut c;
  c.os << "model,kind,name,estimate,se,ci95_lo,ci95_hi,ci95_jacobian_lo,ci95_jacobian_hi,text\n";
  const json& in = rec["input"];
  c.row("", "input", "rows", in["rows"]);
  c.row("", "input", "n_resolved", nullptr, nullptr, nullptr, nullptr, rec["options"].value("n_resolved", std::string()));
  if (rec["options"].contains("n_note")) c.row("", "note", "n", nullptr, nullptr, nullptr, nullptr, rec["options"]["n_note"]);
  if (in.contains("tokens_note")) c.row("", "note", "tokens", nullptr, nullptr, nullptr, nullptr, in["tokens_note"]);
  if (in.contains("range"))
    for (auto it = in["range"].begin(); it != in["range"].end(); ++it) c.row("", "range", it.key(), nullptr, nullptr, it.value());
  for (const auto& w : in["warnings"]) c.row("", "input_warning", "", nullptr, nullptr, nullptr, nullptr, w);
  if (rec.contains("replicates"))
    for (auto it = rec["replicates"].begin(); it != rec["replicates"].end(); ++it) c.row("", "replicates", it.key(), it.value());
  if (rec.contains("best_of"))
    for (const auto& b : rec["best_of"]["configurations"]) {
      std::string shape;
      for (auto it = b["shape"].begin(); it != b["shape"].end(); ++it)
        shape += (shape.empty() ? "" : " ") + it.key() + "=" + num_text(it.value());
      std::string flags = b["edge"].is_string() ? "edge:" + b["edge"].get<std::string>() : "";
      if (b["single_candidate"] == true) flags += (flags.empty() ? "" : " ") + std::string("single_candidate");
      c.row("", "best_of", shape, b["chosen"], nullptr, nullptr, nullptr, flags);
    }
  for (const auto& m : rec["models"]) {
    const std::string name = m["name"];
    for (const auto& pn : m["param_names"]) {
      const json& p = m["params"][pn.get<std::string>()];
      std::string flags;
      for (const char* f : {"fixed", "at_bound", "non_positive"})
        if (p.value(f, false)) flags += (flags.empty() ? "" : " ") + std::string(f);
      for (const auto& wk : m["weakly_identified"])
        if (wk == pn) flags += (flags.empty() ? "" : " ") + std::string("weakly_identified");
      c.row(name, "param", pn, p["estimate"], p["se"], p["ci95_bootstrap"], p["ci95_jacobian"], flags);
    }
    for (const auto& pn : m["param_names"]) {
      const json& p = m["params"][pn.get<std::string>()];
      if (p.contains("ci95_profile"))
        c.row(name, "profile", pn, p["estimate"], nullptr, p["ci95_profile"], nullptr,
              p.contains("ci95_profile_open") ? "open " + p["ci95_profile_open"].dump() : "");
    }
    if (m.contains("identification"))
      for (auto it = m["identification"]["ranges"].begin(); it != m["identification"]["ranges"].end(); ++it) {
        bool bad = false;
        for (const auto& x : m["identification"]["not_identified"]) bad = bad || x == it.key();
        c.row(name, "identification", it.key(), nullptr, nullptr, it.value(), nullptr, bad ? "not identified" : "identified");
      }
    for (const char* k : {"converged", "status", "starts", "converged_starts", "starts_at_best", "distinct_optima",
                          "iterations", "condition_number"}) {
      const json& v = m["fit"][k];
      c.row(name, "fit", k, v.is_boolean() ? json(v.get<bool>() ? 1 : 0) : v);
    }
    for (auto it = m["metrics"].begin(); it != m["metrics"].end(); ++it) c.row(name, "metric", it.key(), it.value());
    if (m.contains("extrapolation") && m["extrapolation"].contains("rmse"))
      c.row(name, "metric", "extrapolation_rmse", m["extrapolation"]["rmse"]);
    if (m.contains("lack_of_fit"))
      for (auto it = m["lack_of_fit"].begin(); it != m["lack_of_fit"].end(); ++it)
        c.row(name, "lack_of_fit", it.key(), it.value());
    if (m.contains("dcrit"))
      for (const auto& a : m["dcrit"]["at_widths"])
        c.row(name, "derived", "dcrit@" + format_double(a["width"].get<double>()), a["estimate"], nullptr, a["ci95_bootstrap"]);
    if (m.contains("derived") && m["derived"].contains("compute_optimal")) {
      const json& co = m["derived"]["compute_optimal"];
      if (co["available"] == true)
        for (auto it = co["slopes"].begin(); it != co["slopes"].end(); ++it)
          c.row(name, "derived", "optimal_slope_" + it.key(), it.value(), nullptr,
                co.contains("slopes_bootstrap") ? co["slopes_bootstrap"][it.key()]["ci95_bootstrap"] : json());
      else
        c.row(name, "note", "compute_optimal", nullptr, nullptr, nullptr, nullptr, co.value("reason", std::string()));
    }
    if (m.contains("derived"))  // the law's own (kaplan's Nc, a Box-Cox law's A and constant)
      for (auto it = m["derived"].begin(); it != m["derived"].end(); ++it)
        if (it.value().contains("estimate"))
          c.row(name, "derived", it.key(), it.value()["estimate"], nullptr, it.value()["ci95_bootstrap"], nullptr,
                it.value().value("alpha_near_zero", false) ? "alpha_near_zero" : "");
    for (const auto& ni : m["not_identifiable"]) c.row(name, "not_identifiable", ni.get<std::string>());
    for (const auto& note : m["notes"]) c.row(name, "note", "", nullptr, nullptr, nullptr, nullptr, note);
  }
  for (const auto& s : rec["skipped_models"])
    c.row(s["name"], "skipped", s.value("equivalent_to", std::string()), nullptr, nullptr, nullptr, nullptr, s["reason"]);
  const json& comp = rec["comparison"];
  for (const auto& t : comp["table"])
    for (const char* k : {"k", "aicc", "delta_aicc", "akaike_weight", "aic", "bic", "r2", "rmse", "loo_rmse", "score"})
      if (t.contains(k)) c.row(t["model"], "comparison", k, t[k]);
  for (const auto& l : comp["likelihood_ratio"]) {
    const std::string vs = "vs " + l["reduced"].get<std::string>();
    for (const char* k : {"statistic", "df", "p_value"}) c.row(l["full"], "lrt", k, l[k], nullptr, nullptr, nullptr, vs);
    if (l.contains("warning")) c.row(l["full"], "warning", "lrt", nullptr, nullptr, nullptr, nullptr, l["warning"]);
  }
  for (const char* k : {"selected_model", "selected_phi_model", "selected_identified_model"})
    if (rec.contains(k)) c.row("", "selected", k, nullptr, nullptr, nullptr, nullptr, text_of(rec[k]));
  c.row("", "selected", "criterion", nullptr, nullptr, nullptr, nullptr, comp["criterion"]);
  if (rec.contains("warnings"))
    for (const auto& w : rec["warnings"]) c.row("", "warning", "", nullptr, nullptr, nullptr, nullptr, w);
  return c.os.str();
}

}  // namespace

std::string render_record(const json& rec, const std::string& format) {
  if (format == "json") return rec.dump(2) + "\n";
  if (format == "table") return render_text(rec, false);
  if (format == "markdown") return render_text(rec, true);
  if (format == "csv") return render_csv(rec);
  throw Error("--format '" + format + "': expected table, markdown, csv or json");
}

std::string predictions_csv(const std::vector<PredictionRow>& rows) {
  std::ostringstream os;
  os << "model,run,source,line,depth,width,N,T,observed,predicted,residual,loo_predicted,extrapolation_predicted\n";
  auto positive = [](double v) { return v > 0 ? format_double(v) : std::string(); };
  for (const auto& r : rows)
    os << csv_row({r.model, r.run, r.source, std::to_string(r.line), positive(r.depth), positive(r.width),
                   format_double(r.N), positive(r.T), format_double(r.observed), format_double(r.predicted),
                   format_double(r.residual), format_double(r.loo_predicted), format_double(r.extrapolation_predicted)});
  return os.str();
}

}  // namespace shapelaw::fit
