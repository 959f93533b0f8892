#include "fit/sweep_report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "util/text.h"

namespace shapelaw::fit {

using nlohmann::json;

namespace {

std::string fmt(double v, int digits = 4) { return significant(v, digits); }

double number(const json& j) { return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN(); }

}  // namespace

std::string sweep_readme(const json& s) {
  std::ostringstream os;
  const json& d = s["data"];
  os << "# Does depth hurt? " << s["name"].get<std::string>() << "\n\n";
  os << "**Verdict: " << s["verdict"].get<std::string>() << "**\n\n";
  for (const auto& r : s["verdict_reasons"]) os << "- " << r.get<std::string>() << "\n";
  os << "\n_The rule_: " << s["rule"].get<std::string>() << "\n\n";
  os << "## The data\n\n" << d["rows"] << " rows, " << d["runs"] << " runs (up to " << d["rows_per_run_max"]
     << " checkpoints each), widths";
  for (const auto& w : d["widths"]) os << " " << fmt(w.get<double>());
  os << "; depths " << fmt(d["depth_range"][0].get<double>()) << "–" << fmt(d["depth_range"][1].get<double>());
  if (d["tokens_range"].is_array())
    os << "; tokens " << fmt(d["tokens_range"][0].get<double>(), 3) << "–" << fmt(d["tokens_range"][1].get<double>(), 3);
  os << ". " << d["runs_past_paper_dcrit"] << " runs are past the paper's D_crit(W) = 2.43 ln W. N: "
     << d["n_note"].get<std::string>() << ". Resampling unit: " << d["resample_unit"].get<std::string>()
     << " (the bootstrap draws whole " << d["resample_unit"].get<std::string>() << "s; leave-one-out leaves one out).\n\n";
  os << "Files:";
  for (const auto& f : s["files"]) os << " `" << f.get<std::string>() << "`";
  os << "\n\n## The depth test (no law)\n\n" << s["depth_tests"]["noise"]["note"].get<std::string>() << ".\n\n";
  os << "| width | D_crit (paper) | matching | tokens | depth | runs | loss at the largest | change to the next depth | "
        "beyond the noise |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& w : s["depth_tests"]["widths"]) {
    const auto& curves = w["curves"];
    const auto& steps = w["steps"];
    for (size_t c = 0; c < curves.size(); ++c) {
      const json& cv = curves[c];
      std::string change = "", sign = "";
      if (c < steps.size()) {
        change = fmt(number(steps[c]["final_delta"]), 3) + " ± " +
                 fmt(steps[c]["se"].get<double>(), 2);
        const int sg = steps[c]["sign"];
        sign = sg > 0 ? "deeper worse" : sg < 0 ? "deeper better" : "within";
      }
      const auto& tokens = w["tokens"];
      const std::string tok = w["matching"] == "final" ? fmt(tokens[c].get<double>(), 3) + " (own)"
                                                       : std::to_string(tokens.size()) + " up to " +
                                                             fmt(tokens.back().get<double>(), 3);
      os << "| " << (c == 0 ? fmt(w["width"].get<double>()) : "") << " | "
         << (c == 0 ? fmt(w["paper_dcrit"].get<double>(), 3) : "") << " | "
         << (c == 0 ? w["matching"].get<std::string>() : "") << " | " << (c == 0 || w["matching"] == "final" ? tok : "")
         << " | " << fmt(cv["depth"].get<double>()) << (cv["past_dcrit"].get<bool>() ? " (past)" : "") << " | "
         << cv["runs"].size() << " | " << fmt(number(cv["loss"].back()), 5)
         << " | " << change << " | " << sign << " |\n";
    }
  }
  os << "\n";
  for (const auto& w : s["depth_tests"]["widths"]) os << "- " << w["sentence"].get<std::string>() << "\n";
  os << "\n## The laws, out of sample\n\nEvery law fitted to every row (" << s["options"]["objective"].get<std::string>()
     << " in " << s["options"]["space"].get<std::string>() << " space); leave-one-run-out RMSE in nats; "
     << "D_crit with its 95% run-bootstrap CI (B = " << s["options"]["bootstrap"] << ").\n\n";
  os << "| law | Phi | k | RMSE | leave-one-run-out RMSE | ΔAICc | D_crit at each width: fitted [CI] vs paper |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto& l : s["laws"]) {
    os << "| " << l["name"].get<std::string>() << (l["name"] == s["selected_model"] ? " (selected)" : "") << " | "
       << (l["has_phi"].get<bool>() ? "yes" : "no") << " | " << l["k"] << " | "
       << fmt(number(l["rmse"]), 4) << " | "
       << fmt(number(l["loo_rmse"]), 4) << " | "
       << fmt(number(l["delta_aicc"]), 4) << " | ";
    if (l.contains("dcrit")) {
      std::string cells;
      for (const auto& a : l["dcrit"]) {
        const json& ci = a["ci95_run_bootstrap"];
        cells += (cells.empty() ? "" : "; ") + fmt(a["width"].get<double>()) + ": " +
                 fmt(a["estimate"].get<double>(), 3) + " [" + fmt(number(ci[0]), 3) +
                 ", " + fmt(number(ci[1]), 3) + "] vs " +
                 fmt(a["paper"].get<double>(), 3);
      }
      os << cells;
    }
    os << " |\n";
  }
  if (!s["warnings"].empty()) {
    os << "\n## Warnings\n\n";
    for (const auto& w : s["warnings"]) os << "- " << w.get<std::string>() << "\n";
  }
  os << "\n## Plots\n\n![loss against depth](loss_vs_depth.png) ![loss against tokens](loss_vs_tokens.png) "
        "![predicted against observed](predicted_vs_observed.png)\n\n"
        "Drawn by `gnuplot plots.gp` from the CSV files here (fit-law sweep runs it when gnuplot is installed).\n";
  return os.str();
}

std::vector<std::pair<std::string, std::string>> sweep_plot_files(const SweepResult& r) {
  std::vector<std::pair<std::string, std::string>> files;
  // loss against depth at the largest matched token count, one series per width
  std::ostringstream depth_csv, gp;
  depth_csv.precision(10);
  depth_csv << "width,depth,loss,paper_dcrit\n";
  for (const auto& w : r.depth.widths)
    for (const auto& c : w.curves) depth_csv << w.width << "," << c.depth << "," << c.loss.back() << "," << w.paper_dcrit << "\n";
  files.push_back({"loss_vs_depth.csv", depth_csv.str()});
  std::ostringstream runs_csv;
  runs_csv.precision(10);
  runs_csv << "run,width,depth,tokens,loss\n";
  std::ostringstream pred_csv;
  pred_csv.precision(10);
  pred_csv << "run,width,depth,tokens,observed,predicted,loo_predicted\n";
  const std::string selected = r.sweep["selected_model"].is_string() ? r.sweep["selected_model"].get<std::string>() : "";
  // one block per run, checkpoints in token order, a blank line between runs: gnuplot draws each as a line
  std::vector<const PredictionRow*> by_run;
  for (const auto& p : r.predictions)
    if (p.model == selected) by_run.push_back(&p);
  std::stable_sort(by_run.begin(), by_run.end(), [](const PredictionRow* a, const PredictionRow* b) {
    return a->run != b->run ? a->run < b->run : a->T < b->T;
  });
  for (size_t i = 0; i < by_run.size(); ++i) {
    const PredictionRow& p = *by_run[i];
    if (i > 0 && by_run[i - 1]->run != p.run) runs_csv << "\n";
    runs_csv << p.run << "," << p.width << "," << p.depth << "," << p.T << "," << p.observed << "\n";
  }
  for (const auto& p : r.predictions) {
    if (p.model != selected) continue;
    pred_csv << p.run << "," << p.width << "," << p.depth << "," << p.T << "," << p.observed << "," << p.predicted << ","
             << (std::isfinite(p.loo_predicted) ? std::to_string(p.loo_predicted) : "") << "\n";
  }
  files.push_back({"runs.csv", runs_csv.str()});
  files.push_back({"predictions.csv", pred_csv.str()});
  gp << "# Drawn from the CSV files beside this script (fit-law sweep wrote both).\n"
     << "set datafile separator ','\nset key outside right noenhanced\nset grid\n"
     << "set terminal pngcairo size 900,560 noenhanced font ',11'\n";
  gp << "set output 'loss_vs_depth.png'\nset title 'loss against depth at the largest matched token count; dashed: "
        "the paper D_crit(W) = 2.43 ln W'\nset xlabel 'depth'\nset ylabel 'loss'\nset logscale x 2\n";
  int i = 1;
  for (const auto& w : r.depth.widths) {
    gp << "set arrow " << i << " from " << w.paper_dcrit << ", graph 0 to " << w.paper_dcrit
       << ", graph 1 nohead dt 2 lc " << i << "\n";
    ++i;
  }
  gp << "plot ";
  i = 1;
  for (const auto& w : r.depth.widths) {
    gp << (i > 1 ? ", " : "") << "'loss_vs_depth.csv' using 2:($1==" << w.width << "?$3:1/0) with linespoints lc " << i
       << " title 'W=" << w.width << "'";
    ++i;
  }
  gp << "\nunset arrow\nunset logscale\n";
  gp << "set output 'loss_vs_tokens.png'\nset title 'loss against tokens, one line per run, coloured by ln W'\n"
        "set xlabel 'tokens'\nset logscale x\nset autoscale xfix\nset key off\nset cblabel 'ln W'\n"
        "plot 'runs.csv' using 4:5:(log($2)) with linespoints pt 7 ps 0.4 lc palette title ''\n"
        "unset logscale\nset autoscale x\nunset cblabel\nset key outside right\n";
  gp << "set output 'predicted_vs_observed.png'\nset title '" << selected
     << ": predicted and leave-one-run-out predicted against observed'\nset xlabel 'observed loss'\n"
        "set ylabel 'predicted loss'\n"
        "plot 'predictions.csv' using 5:6 every ::1 with points pt 7 ps 0.5 title 'fitted', "
        "'' using 5:7 every ::1 with points pt 6 ps 0.6 title 'left out', x with lines dt 2 title 'y = x'\n";
  files.push_back({"plots.gp", gp.str()});
  return files;
}

std::string sweeps_overview(const std::vector<json>& sweeps, const std::vector<std::string>& links) {
  std::ostringstream os;
  os << "| study | W | D | tokens | runs (past the paper's D_crit) | depth test: widths with a run past D_crit, "
        "of them with a penalty | verdict | best law with Phi: D_crit at its widest W [run-bootstrap CI] vs 2.43 ln W |\n"
        "|---|---|---|---|---|---|---|---|\n";
  std::map<std::string, int> verdicts;
  int past_runs = 0, comparable = 0, winners = 0;
  double wmin = 1e300, wmax = 0;
  std::vector<std::string> penalty_lines;
  for (size_t i = 0; i < sweeps.size(); ++i) {
    const json& s = sweeps[i];
    const json& d = s["data"];
    const json& dt = s["depth_tests"];
    const auto& widths = d["widths"];
    const double w0 = widths.front().get<double>(), w1 = widths.back().get<double>();
    wmin = std::min(wmin, w0);
    wmax = std::max(wmax, w1);
    const std::string name = s["name"].get<std::string>();
    const std::string label = i < links.size() && !links[i].empty() ? "[" + name + "](" + links[i] + ")" : name;
    std::string tokens = "–";
    if (d["tokens_range"].is_array())
      tokens = fmt(number(d["tokens_range"][0]), 3) + "–" + fmt(number(d["tokens_range"][1]), 3);
    std::string dcrit = "no law with Phi fitted";
    if (s["best_phi_model"].is_string())
      for (const auto& l : s["laws"])
        if (l["name"] == s["best_phi_model"] && l.contains("dcrit") && !l["dcrit"].empty()) {
          const json& a = l["dcrit"].back();
          const json& ci = a["ci95_run_bootstrap"];
          dcrit = l["name"].get<std::string>() + ", W = " + fmt(number(a["width"])) + ": " + fmt(number(a["estimate"]), 3) +
                  " [" + fmt(number(ci[0]), 3) + ", " + fmt(number(ci[1]), 3) + "] vs " + fmt(number(a["paper"]), 3);
        }
    os << "| " << label << " | " << fmt(w0) << (w1 > w0 ? "–" + fmt(w1) : "") << " | "
       << fmt(number(d["depth_range"][0])) << "–" << fmt(number(d["depth_range"][1])) << " | " << tokens << " | "
       << d["runs"] << " (" << d["runs_past_paper_dcrit"] << ") | " << dt["widths_with_past_dcrit"] << ", "
       << dt["widths_with_penalty"] << " | **" << s["verdict"].get<std::string>() << "** | " << dcrit << " |\n";
    ++verdicts[s["verdict"].get<std::string>()];
    past_runs += d["runs_past_paper_dcrit"].get<int>();
    for (const auto& w : dt["widths"]) {
      const auto& curves = w["curves"];
      bool has = false;  // a run past D_crit with a shallower run beside it
      for (size_t c = 1; c < curves.size(); ++c) has |= curves[c]["past_dcrit"].get<bool>();
      if (!has) continue;
      ++comparable;
      if (w["past_dcrit_winner"].is_number()) ++winners;
      for (const auto& p : w["worse_past_dcrit"])
        penalty_lines.push_back(name + ", W = " + fmt(number(w["width"])) + ": D = " + fmt(number(p["deep"])) +
                                " worse than D = " + fmt(number(p["shallow"])));
    }
  }
  os << "\n**Across " << sweeps.size() << " studies (W " << fmt(wmin) << "–" << fmt(wmax) << "):** ";
  std::string vs;
  for (const char* v : {"supported", "refuted", "undecided"})
    if (verdicts.count(v)) vs += (vs.empty() ? "" : ", ") + std::to_string(verdicts[v]) + " " + v;
  os << vs << ". " << past_runs << " runs lie past the paper's D_crit(W) = 2.43 ln W. At " << comparable
     << " widths a run past D_crit can be compared with a shallower run at the same width: at " << winners
     << " of them a run past D_crit has a lower loss than every shallower run at every matched token count, and at "
     << penalty_lines.size() << (penalty_lines.size() == 1 ? " pair" : " pairs")
     << " a run past D_crit is worse than a shallower one beyond the noise";
  if (!penalty_lines.empty()) {
    os << " (";
    for (size_t i = 0; i < penalty_lines.size() && i < 8; ++i) os << (i ? "; " : "") << penalty_lines[i];
    if (penalty_lines.size() > 8) os << "; and " << penalty_lines.size() - 8 << " more";
    os << ")";
  }
  os << ".\n";
  return os.str();
}

}  // namespace shapelaw::fit
