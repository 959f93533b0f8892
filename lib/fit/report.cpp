#include "fit/report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

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
  if (rec["input"].contains("tokens_note")) os << (md ? "\n" : "") << "note: " << rec["input"]["tokens_note"].get<std::string>() << "\n";
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
    if (m.contains("derived") && m["derived"].contains("compute_optimal")) {
      const json& co = m["derived"]["compute_optimal"];
      if (co["available"] == true && !co["slopes"]["N"].is_number()) {
        os << (md ? "\n" : "") << "compute-optimal: no interior optimum (" << co.value("reason", std::string()) << ")\n";
      } else if (co["available"] == true) {
        const json& s = co["slopes"];
        auto boot = [&](const char* k) {
          return co.contains("slopes_bootstrap") ? ci(co["slopes_bootstrap"][k]["ci95_bootstrap"], 3) : std::string();
        };
        os << (md ? "\n" : "") << "compute-optimal: N* ~ C^" << g(s["N"], 3) << boot("N") << ", T* ~ C^" << g(s["T"], 3)
           << boot("T");
        if (s["D_deepest"].is_number())
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
  t.header = {"model", "k", "R2", "RMSE", "LOO-RMSE", "AICc", "dAICc", "weight", "BIC"};
  for (const auto& r : rec["comparison"]["table"])
    t.rows.push_back({r["model"].get<std::string>(), g(r["k"]), g(r["r2"]), g(r["rmse"]), g(r["loo_rmse"]),
                      g(r["aicc"], 5), g(r.value("delta_aicc", json(nullptr)), 3),
                      g(r.value("akaike_weight", json(nullptr)), 3), g(r["bic"], 5)});
  os << t.render(md);
  for (const auto& l : rec["comparison"]["likelihood_ratio"])
    os << (md ? "\n" : "") << "LR test " << l["full"].get<std::string>() << " vs " << l["reduced"].get<std::string>()
       << ": statistic " << g(l["statistic"]) << ", df " << l["df"] << ", p " << g(l["p_value"], 3) << " (approximate)\n";
  os << (md ? "\n" : "") << "selected (" << rec["comparison"]["criterion"].get<std::string>()
     << "): " << rec["selected_model"].get<std::string>() << "\n";
  return os.str();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += (c == '"') ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num_text(const json& v) { return v.is_number() ? format_double(v.get<double>()) : ""; }

}  // namespace

std::string render_record(const json& rec, const std::string& format) {
  if (format == "json") return rec.dump(2) + "\n";
  if (format == "table") return render_text(rec, false);
  if (format == "markdown") return render_text(rec, true);
  if (format == "csv") {
    std::ostringstream os;
    os << "model,kind,name,estimate,se,ci95_lo,ci95_hi,ci95_jacobian_lo,ci95_jacobian_hi\n";
    for (const auto& m : rec["models"]) {
      std::string name = m["name"];
      for (const auto& pn : m["param_names"]) {
        const json& p = m["params"][pn.get<std::string>()];
        os << csv_field(name) << ",param," << pn.get<std::string>() << "," << num_text(p["estimate"]) << ","
           << num_text(p["se"]) << "," << num_text(p["ci95_bootstrap"][0]) << "," << num_text(p["ci95_bootstrap"][1])
           << "," << num_text(p["ci95_jacobian"][0]) << "," << num_text(p["ci95_jacobian"][1]) << "\n";
      }
      for (const auto& pn : m["param_names"]) {
        const json& p = m["params"][pn.get<std::string>()];
        if (p.contains("ci95_profile"))
          os << csv_field(name) << ",profile," << pn.get<std::string>() << "," << num_text(p["estimate"]) << ",,"
             << num_text(p["ci95_profile"][0]) << "," << num_text(p["ci95_profile"][1]) << ",,\n";
      }
      for (auto it = m["metrics"].begin(); it != m["metrics"].end(); ++it)
        os << csv_field(name) << ",metric," << it.key() << "," << num_text(it.value()) << ",,,,,\n";
      if (m.contains("extrapolation") && m["extrapolation"].contains("rmse"))
        os << csv_field(name) << ",metric,extrapolation_rmse," << num_text(m["extrapolation"]["rmse"]) << ",,,,,\n";
      if (m.contains("dcrit"))
        for (const auto& a : m["dcrit"]["at_widths"])
          os << csv_field(name) << ",derived,dcrit@" << format_double(a["width"].get<double>()) << ","
             << num_text(a["estimate"]) << ",," << num_text(a["ci95_bootstrap"][0]) << ","
             << num_text(a["ci95_bootstrap"][1]) << ",,\n";
      if (m.contains("derived") && m["derived"].contains("compute_optimal")) {
        const json& co = m["derived"]["compute_optimal"];
        if (co["available"] == true)
          for (auto it = co["slopes"].begin(); it != co["slopes"].end(); ++it) {
            json lo, hi;
            if (co.contains("slopes_bootstrap")) {
              lo = co["slopes_bootstrap"][it.key()]["ci95_bootstrap"][0];
              hi = co["slopes_bootstrap"][it.key()]["ci95_bootstrap"][1];
            }
            os << csv_field(name) << ",derived,optimal_slope_" << it.key() << "," << num_text(it.value()) << ",,"
               << num_text(lo) << "," << num_text(hi) << ",,\n";
          }
      }
      if (m.contains("derived") && m["derived"].contains("Nc")) {
        const json& nc = m["derived"]["Nc"];
        os << csv_field(name) << ",derived,Nc," << num_text(nc["estimate"]) << ",," << num_text(nc["ci95_bootstrap"][0])
           << "," << num_text(nc["ci95_bootstrap"][1]) << ",,\n";
      }
    }
    return os.str();
  }
  throw Error("--format '" + format + "': expected table, markdown, csv or json");
}

std::string predictions_csv(const std::vector<PredictionRow>& rows) {
  std::ostringstream os;
  os << "model,run,source,line,depth,width,N,T,observed,predicted,residual,loo_predicted,extrapolation_predicted\n";
  for (const auto& r : rows)
    os << csv_field(r.model) << "," << csv_field(r.run) << "," << csv_field(r.source) << "," << r.line << ","
       << format_double(r.depth) << "," << format_double(r.width) << "," << format_double(r.N) << ","
       << (r.T > 0 ? format_double(r.T) : "") << "," << format_double(r.observed) << ","
       << format_double(r.predicted) << "," << format_double(r.residual) << "," << format_double(r.loo_predicted)
       << "," << format_double(r.extrapolation_predicted) << "\n";
  return os.str();
}

}  // namespace shapelaw::fit
