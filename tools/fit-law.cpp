// fit-law: fit named scaling laws to run results with honest uncertainty.
// All logic lives in lib/fit/; this file only parses flags and wires outputs.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "fit/best_of.h"
#include "fit/analysis.h"
#include "fit/laws.h"
#include "fit/report.h"
#include "fit/sweep.h"
#include "fit/sweep_report.h"
#include "fit/table.h"
#include "study/analysis.h"
#include "study/curves.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/output.h"
#include "util/command_line.h"
#include "util/tool_main.h"

using namespace shapelaw;

namespace {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not JSON (" + std::string(e.what()) + ")");
  }
}


// fit-law study: the default study's statistics, verdicts and headline (lib/study/).
int study_main(int argc, char** argv) {
  CLI::App app{"The statistics and verdicts of a study, from its fit record and its runs' summary.json files:\n"
               "replicate means and the pooled seed SD, the excess of the deepest over the best depth per width\n"
               "with its SE and verdict, what the fit says of the paper's law (and every reason not to lean on it),\n"
               "the controls' verdict, and the headline. Writes study.json (docs/formats.md); prints the headline.",
               "fit-law study"};
  std::string fit_path, out_path, curves_path, controls_path;
  std::vector<std::string> summaries;
  app.add_option("--fit", fit_path, "the study's fit record (fit-law -o fit.json)")->required();
  app.add_option("summaries", summaries, "summary.json files (default: the files the fit read)");
  app.add_option("--controls", controls_path, "the controls' study.json (fit-law controls), for the headline");
  app.add_option("--curves", curves_path, "write the selected law's and the best law with D_crit's curves here (CSV)");
  app.add_option("--out,-o", out_path, "write study.json here ('-': stdout, instead of the headline)");
  if (int rc = parse_command_line(app, argc, argv, "fit-law study"); rc >= 0) return rc;
  const nlohmann::json fit = read_json_file(fit_path);
  nlohmann::json controls = controls_path.empty() ? nlohmann::json(nullptr) : read_json_file(controls_path);
  study::StudyAnalysis a = study::analyze_study(fit, fit_path, summaries, controls);
  if (!curves_path.empty()) {
    std::vector<std::string> models;
    for (const char* key : {"selected_model", "selected_phi_model"})
      if (fit.contains(key) && fit[key].is_string() &&
          std::find(models.begin(), models.end(), fit[key].get<std::string>()) == models.end())
        models.push_back(fit[key].get<std::string>());
    write_output(curves_path, study::curves_csv(study::law_curves(fit, models, a.runs)));
  }
  if (!out_path.empty()) write_output(out_path, study::study_json(a).dump(2) + "\n");
  if (!is_stdout(out_path)) write_output("-", a.headline);
  return 0;
}

// fit-law controls: the controls study's arms (SP at a fixed lr, SP at its best lr, CompleteP).
int controls_main(int argc, char** argv) {
  CLI::App app{"The controls' arms from their runs' summary.json files: SP at the fixed lr, SP at its best lr per\n"
               "grid row, CompleteP at its best base lr; per arm the excess of the deepest over the best depth with\n"
               "its SE and verdict (the same rule as fit-law study), the best lr per row with its edge flag, the\n"
               "equal-parameter rows, and with --fit each arm's law. Writes the controls' study.json.",
               "fit-law controls"};
  std::vector<std::string> sp, completep, fit_specs;
  std::string out_path, spread_from;
  double fixed_lr = 3e-3;
  app.add_option("--sp", sp, "SP's summary.json files, every lr")->required();
  app.add_option("--completep", completep, "CompleteP's summary.json files")->required();
  app.add_option("--fixed-lr", fixed_lr, "SP's fixed learning rate (arm 1)")->capture_default_str();
  app.add_option("--fit", fit_specs, "ARM=FIT.json: an arm's fit record (arms: sp-fixed, sp-tuned, completep)");
  app.add_option("--seed-sd-from", spread_from,
                 "a study.json whose pooled seed SD judges the excesses when the controls have no seeds of their own");
  app.add_option("--out,-o", out_path, "write the controls' study.json here ('-': stdout)");
  if (int rc = parse_command_line(app, argc, argv, "fit-law controls"); rc >= 0) return rc;
  std::map<std::string, nlohmann::json> fits;
  for (const auto& spec : fit_specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--fit '" + spec + "': expected ARM=FIT.json");
    const std::string arm = spec.substr(0, eq);
    if (arm != "sp-fixed" && arm != "sp-tuned" && arm != "completep")
      throw Error("--fit '" + spec + "': unknown arm '" + arm + "' (sp-fixed, sp-tuned, completep)");
    fits[arm] = read_json_file(spec.substr(eq + 1));
  }
  std::optional<study::SeedSpread> spread;
  if (!spread_from.empty()) {
    const nlohmann::json s = read_json_file(spread_from);
    if (!s.contains("seed_spread")) throw Error(spread_from + ": no 'seed_spread' (not a study.json)");
    const auto& ss = s["seed_spread"];
    if (ss.value("available", false))
      spread = study::SeedSpread{true, ss.at("sd").get<double>(), ss.at("df").get<int>(),
                                 ss.at("source").get<std::string>() + " in " + spread_from};
  }
  study::ControlsAnalysis a = study::analyze_controls(sp, completep, fixed_lr, fits, spread);
  const nlohmann::json j = study::controls_json(a);
  if (!out_path.empty()) write_output(out_path, j.dump(2) + "\n");
  if (!is_stdout(out_path)) write_output("-", j["verdict"].get<std::string>() + "\n");
  return 0;
}

// fit-law sweep: one study's answer to the paper's question from a depth x width sweep (lib/fit/sweep.h).
int sweep_main(int argc, char** argv) {
  CLI::App app{"Put the paper's claim against a depth x width sweep: summary.json files or directories of them,\n"
               "or CSV/JSONL tables with several checkpoints per run (--col maps their column names). Writes\n"
               "DIR/sweep.json (docs/formats.md), DIR/README.md, DIR/fit.json and the plots' data with plots.gp\n"
               "(drawn when gnuplot is installed): the law-free depth test at matched tokens, every law compared\n"
               "leaving one run out, each law's D_crit with its run-bootstrap CI against 2.43 ln W, and a verdict\n"
               "(supported, refuted or undecided, by the rule the README states). Rows that share a run are\n"
               "checkpoints of one run: the bootstrap resamples and leave-one-out leaves out whole runs.",
               "fit-law sweep"};
  std::vector<std::string> inputs, col_specs;
  std::string out_dir;
  fit::SweepOptions o = fit::default_sweep_options();
  bool no_plots = false, skip_bad = false;
  int threads = 0;
  app.add_option("inputs", inputs, "summary.json files, directories (searched for summary.json), .csv, .jsonl")->required();
  app.add_option("--col", col_specs, "column mapping FIELD=COLUMN[*SCALE], e.g. run=run_name tokens=tokens_b*1e9 "
                                     "(fields as fit-law's)");
  app.add_option("--out,-o", out_dir, "the directory to write")->required();
  app.add_option("--name", o.name, "the study's name in the report (default: the first input)");
  app.add_option("--n", o.law.n_source, "parameter count N, as fit-law's --n")->capture_default_str()
      ->check(CLI::IsMember({"auto", "12dw2", "total", "nonembedding"}));
  app.add_option("--bootstrap,-B", o.law.bootstrap, "run-bootstrap resamples")->capture_default_str()->check(non_negative_number());
  app.add_option("--seed", o.law.seed, "bootstrap seed")->capture_default_str();
  app.add_option("--huber-delta", o.law.fit.objective.delta, "Huber delta (log-space residuals)")->capture_default_str()
      ->check(positive_number());
  app.add_option("--seed-sd", o.depth.assumed_seed_sd,
                 "the seed-to-seed SD of the loss (nats) assumed where the data has no seeds; with seeds, theirs is used")
      ->capture_default_str()->check(positive_number());
  app.add_option("--threads,-j", threads, "worker threads (0: all cores)")->capture_default_str()->check(non_negative_number());
  app.add_flag("--no-plots", no_plots, "write the plots' data and plots.gp, but do not run gnuplot");
  app.add_flag("--skip-bad-rows", skip_bad, "warn about and skip bad rows instead of failing");
  std::string best_of;
  app.add_option("--best-of", best_of, "per configuration keep the runs of the KEY value with the lowest mean loss, "
                                       "as fit-law's --best-of (e.g. lr for a learning-rate sweep; one row per run)");
  if (int rc = parse_command_line(app, argc, argv, "fit-law sweep"); rc >= 0) return rc;
  o.law.fit.threads = threads;
  fit::LoadOptions lo;
  lo.skip_bad_rows = skip_bad;
  for (const auto& spec : col_specs) lo.columns.insert(fit::parse_column_spec(spec));
  fit::LoadResult data = fit::load_tables(inputs, lo);
  if (!best_of.empty()) {
    // best-of compares configurations row by row; checkpoints of one run would be picked apart
    if (fit::runs_repeat(data.rows))
      throw Error("--best-of " + best_of + ": rows share runs (checkpoints), and --best-of picks among runs of one "
                  "row each (summary.json studies); give each run's final row, or leave --best-of out");
    fit::BestOfResult b = fit::select_best_of(data.rows, best_of);
    data.rows = std::move(b.rows);
    data.warnings.insert(data.warnings.end(), b.warnings.begin(), b.warnings.end());
  }
  fit::check_sweep_rows(data.rows);  // before N is resolved: its message would hide what is missing
  const fit::NChoice n = fit::resolve_inputs(data.rows, o.law.n_source, lo.columns);
  fit::SweepResult r = fit::run_sweep(std::move(data.rows), data.files, data.warnings, n, o);
  std::filesystem::create_directories(out_dir);
  const std::string dir = out_dir + "/";
  write_output(dir + "fit.json", r.fit.dump(2) + "\n");
  for (const auto& [name, content] : fit::sweep_plot_files(r)) write_output(dir + name, content);
  std::string plots = "not drawn (--no-plots)";
  if (!no_plots) {
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
      plots = "not drawn: gnuplot is not installed (run `gnuplot plots.gp` in " + out_dir + ")";
    } else {
      const std::string cmd = "cd '" + out_dir + "' && gnuplot plots.gp";
      plots = std::system(cmd.c_str()) == 0 ? "drawn" : "not drawn: gnuplot failed on plots.gp (its message is above)";
    }
  }
  r.sweep["plots"] = plots;
  write_output(dir + "sweep.json", r.sweep.dump(2) + "\n");
  write_output(dir + "README.md", fit::sweep_readme(r.sweep));
  std::fprintf(stderr, "fit-law sweep: %s: %s (%s/README.md); plots %s\n", r.sweep["name"].get<std::string>().c_str(),
               r.sweep["verdict"].get<std::string>().c_str(), out_dir.c_str(), plots.c_str());
  return 0;
}

// fit-law overview: several sweeps side by side, with the answer across them (make published).
int overview_main(int argc, char** argv) {
  CLI::App app{"One row per study from fit-law sweep's sweep.json files (who, W range, D range, tokens, runs past the\n"
               "paper's D_crit, the depth test, the verdict, D_crit against 2.43 ln W) and a paragraph that answers\n"
               "the paper's question across them, in markdown.",
               "fit-law overview"};
  std::vector<std::string> inputs;
  std::string out_path = "-", links_base;
  app.add_option("sweeps", inputs, "sweep.json files (fit-law sweep -o DIR writes DIR/sweep.json)")->required();
  app.add_option("--link-from", links_base, "link each row to its README.md, relative to this directory");
  app.add_option("--out,-o", out_path, "write the markdown here ('-': stdout)")->capture_default_str();
  if (int rc = parse_command_line(app, argc, argv, "fit-law overview"); rc >= 0) return rc;
  std::vector<nlohmann::json> sweeps;
  std::vector<std::string> links;
  for (const auto& path : inputs) {
    nlohmann::json s = read_json_file(path);
    if (s.value("format", "") != "shapelaw.sweep") throw Error(path + ": field 'format': not a sweep.json (fit-law sweep)");
    sweeps.push_back(std::move(s));
    links.push_back(links_base.empty() ? ""
                                       : std::filesystem::relative(std::filesystem::path(path).parent_path() / "README.md",
                                                                   links_base).string());
  }
  write_output(out_path, fit::sweeps_overview(sweeps, links));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "overview")
    return tool_main("fit-law overview", [&]() -> int { return overview_main(argc - 1, argv + 1); });
  if (argc > 1 && std::string(argv[1]) == "sweep")
    return tool_main("fit-law sweep", [&]() -> int { return sweep_main(argc - 1, argv + 1); });
  if (argc > 1 && std::string(argv[1]) == "study")
    return tool_main("fit-law study", [&]() -> int { return study_main(argc - 1, argv + 1); });
  if (argc > 1 && std::string(argv[1]) == "controls")
    return tool_main("fit-law controls", [&]() -> int { return controls_main(argc - 1, argv + 1); });
  return tool_main("fit-law", [&]() -> int {
    CLI::App app{"Fit scaling laws (paper ansatz, ablations, Kaplan, Chinchilla, gradient persistence)\n"
                 "to summary.json files, directories of them, or CSV/JSONL tables (a params,tokens,loss table\n"
                 "needs no depth or width: the laws that use them are skipped). The input order does not\n"
                 "change the answer. --format json (and -o fit.json) is the complete record; csv carries\n"
                 "every number and statement of it as rows (docs/formats.md); notes and warnings also go\n"
                 "to stderr in every format.\n"
                 "fit-law study / fit-law controls (see their --help): a study's statistics, verdicts and headline.\n"
                 "fit-law sweep / fit-law overview (see their --help): the paper's claim against a depth x width sweep,\n"
                 "with a verdict; several sweeps side by side."};
    app.set_version_flag("--version", shapelaw::tool_version("fit-law"));
    std::vector<std::string> inputs, col_specs, models;
    fit::LawOptions o;
    std::string loss = "huber", space = "log", phi = "absolute", format = "table", out_path, pred_path;
    std::string weights = "none", compute_range = "1e18:1e24", best_of;
    double delta = 1e-3;
    bool list_models = false, skip_bad = false, no_loo = false, mixed_tokenizers = false;
    int threads = 0;
    app.add_option("inputs", inputs, "summary.json files, directories (searched for summary.json), globs, .csv, .jsonl");
    app.add_option("--col", col_specs, "column mapping FIELD=COLUMN[*SCALE], e.g. tokens=tokens_b*1e9 "
                                       "(fields: run group tokenizer tokenizer_kind depth width loss tau loss_se params params_nonembedding tokens compute)");
    app.add_option("--model,-m", models, "laws to fit (repeat or comma-separate; default: every law for the response but the width-depth "
                                       "rivals gemstones and inverse-depth, fitted by name or by fit-law sweep)")
        ->delimiter(',');
    app.add_flag("--tau", o.tau, "input is a probe-grads tau table (fits tau-power and tau-log against width)");
    app.add_flag("--list-models", list_models, "list the laws and exit");
    app.add_option("--loss", loss, "objective: huber or ls (least squares)")->capture_default_str()->check(CLI::IsMember({"huber", "ls"}));
    app.add_option("--huber-delta", delta, "Huber delta (residual units of --space)")->capture_default_str()->check(positive_number());
    app.add_option("--space", space, "residuals in log space (ln f - ln y) or loss space (f - y)")->capture_default_str()
        ->check(CLI::IsMember({"log", "loss"}));
    app.add_option("--phi", phi, "depth penalty: absolute = gamma*max(0,D-Dcrit)/W^mu (§3.4, default); "
                                 "relative = .../(W^mu*Dcrit) (appendix A.2)")->capture_default_str()
        ->check(CLI::IsMember({"absolute", "relative"}));
    app.add_option("--bootstrap,-B", o.bootstrap, "bootstrap resamples (0: none)")->capture_default_str()->check(non_negative_number());
    app.add_option("--seed", o.seed, "bootstrap seed")->capture_default_str();
    app.add_option("--threads,-j", threads, "worker threads (0: all cores)")->capture_default_str()->check(non_negative_number());
    app.add_option("--holdout", o.holdout, "fraction of rows with the largest N held out by the extrapolation check (0: off)")->capture_default_str()
        ->check(CLI::Range(0.0, 0.9));
    app.add_flag("--no-loo", no_loo, "skip leave-one-out cross-validation");
    app.add_option("--loo-max-groups", o.loo_max_groups,
                   "above this many groups (rows, without --group), leave-one-out refits a seeded random sample of "
                   "this many, each exactly, and says so (0: every group; the cost is groups x rows)")
        ->capture_default_str()->check(non_negative_number());
    bool no_profile = false;
    app.add_flag("--no-profile", no_profile, "skip profile-likelihood CIs of the nonlinear parameters");
    app.add_option("--n", o.n_source, "parameter count N: auto (a column mapped with --col params_nonembedding= or "
                                      "--col params=, else non-embedding if every row has it, else 12*D*W^2, else the "
                                      "total count; every output states the choice), 12dw2, total, nonembedding")->capture_default_str()
        ->check(CLI::IsMember({"auto", "12dw2", "total", "nonembedding"}));
    app.add_option("--weights", weights, "none, or se (weight rows by 1/loss_se^2)")->capture_default_str()->check(CLI::IsMember({"none", "se"}));
    app.add_option("--dcrit-widths", o.dcrit_widths, "widths at which D_crit is reported with CIs")->capture_default_str()->delimiter(',');
    app.add_option("--compute-range", compute_range, "C_MIN:C_MAX for the compute-optimal search (FLOPs)")->capture_default_str();
    app.add_option("--optimal-draws", o.optimal_draws, "bootstrap draws carried through the compute-optimal search")->capture_default_str()
        ->check(non_negative_number());
    std::vector<std::string> fix_specs;
    app.add_option("--fix", fix_specs, "hold a parameter at a value in every law that has it, NAME=VALUE "
                                       "(e.g. --fix kappa=2.43 to test a published value); a law with every parameter held is "
                                       "evaluated at them, not fitted (no CIs)");
    std::vector<std::string> grid_specs;
    app.add_option("--grid", grid_specs, "multi-start values of a nonlinear parameter, NAME=V1:V2:... "
                                         "(e.g. --grid kappa=1:2:3:4; default grids: docs/formats.md)");
    app.add_option("--select", o.select, "model selection criterion")->capture_default_str()->check(CLI::IsMember({"aicc", "aic", "bic", "loo"}));
    app.add_option("--max-iterations", o.fit.lm.max_iterations, "LM iteration limit per start")->capture_default_str()->check(positive_number());
    app.add_option("--best-of", best_of,
                   "per configuration (the binding config less KEY and seed), keep only the runs of the KEY value "
                   "with the lowest mean loss over its seeds, e.g. --best-of lr for a learning-rate sweep; "
                   "winners at the edge of their sweep are flagged (fit.json best_of)");
    app.add_option("--out,-o", out_path, "write the fit record (fit.json) here ('-': stdout, instead of the report)");
    app.add_option("--predictions", pred_path, "write per-row predictions and residuals (observed - predicted), CSV, "
                                               "here ('-': stdout, instead of the report)");
    app.add_option("--format", format, "stdout: table, markdown, csv or json")->capture_default_str()
        ->check(CLI::IsMember({"table", "markdown", "csv", "json"}));
    app.add_flag("--skip-bad-rows", skip_bad, "warn about and skip bad rows instead of failing");
    app.add_flag("--allow-mixed-tokenizers", mixed_tokenizers,
                 "fit rows from different tokenizers together (refused by default: their losses per token "
                 "are different quantities); warns instead");
    if (const int rc = parse_command_line(app, argc, argv, "fit-law"); rc >= 0) return rc;
    if (list_models) {
      for (const auto& m : fit::model_catalog()) {
        auto model = fit::make_model(m.name, {});
        std::cout << m.name << "\t" << m.response << "\t" << model.formula << "\t" << m.description << "\n";
      }
      return 0;
    }
    if (inputs.empty()) {
      std::fprintf(stderr, "fit-law: error: no input given (see --help)\n");
      return 2;
    }
    auto colon = compute_range.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("");
      o.optimal.c_min = std::stod(compute_range.substr(0, colon));
      o.optimal.c_max = std::stod(compute_range.substr(colon + 1));
    } catch (const std::exception&) {
      throw Error("--compute-range '" + compute_range + "': expected C_MIN:C_MAX, e.g. 1e18:1e24");
    }
    if (!(o.optimal.c_min > 0 && o.optimal.c_max > o.optimal.c_min))
      throw Error("--compute-range: need 0 < C_MIN < C_MAX");
    o.fit.objective.kind = loss == "ls" ? fit::Objective::LeastSquares : fit::Objective::Huber;
    o.fit.objective.delta = delta;
    o.fit.log_space = space == "log";
    o.fit.threads = threads;
    o.phi_relative = phi == "relative";
    o.weights_se = weights == "se";
    o.loo = !no_loo;
    o.profile = !no_profile;
    o.models = models;
    for (const auto& spec : grid_specs) {
      auto eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) throw Error("--grid '" + spec + "': expected NAME=V1:V2:...");
      std::vector<double> values;
      std::stringstream ss(spec.substr(eq + 1));
      std::string item;
      while (std::getline(ss, item, ':')) {
        try {
          size_t used = 0;
          values.push_back(std::stod(item, &used));
          if (used != item.size()) throw std::invalid_argument("");
        } catch (const std::exception&) {
          throw Error("--grid '" + spec + "': '" + item + "' is not a number");
        }
      }
      if (values.empty()) throw Error("--grid '" + spec + "': no values");
      o.grids.emplace_back(spec.substr(0, eq), values);
    }
    for (const auto& spec : fix_specs) {
      auto eq = spec.find('=');
      double v = 0;
      try {
        if (eq == std::string::npos || eq == 0) throw std::invalid_argument("");
        size_t used = 0;
        v = std::stod(spec.substr(eq + 1), &used);
        if (used != spec.size() - eq - 1) throw std::invalid_argument("");
      } catch (const std::exception&) {
        throw Error("--fix '" + spec + "': expected NAME=NUMBER");
      }
      o.fixed.emplace_back(spec.substr(0, eq), v);
    }
    for (const auto& m : models) fit::make_model(m, {});  // unknown names fail before any work

    fit::LoadOptions lo;
    lo.tau_table = o.tau;
    lo.skip_bad_rows = skip_bad;
    lo.allow_mixed_tokenizers = mixed_tokenizers;
    for (const auto& spec : col_specs) lo.columns.insert(fit::parse_column_spec(spec));
    if (is_stdout(out_path) && is_stdout(pred_path)) throw Error("-o - and --predictions -: only one output can be stdout");
    fit::LoadResult data = fit::load_tables(inputs, lo);
    fit::FitInput in;
    in.files = data.files;
    in.warnings = data.warnings;
    if (!best_of.empty()) {
      fit::BestOfResult b = fit::select_best_of(data.rows, best_of);
      in.rows = std::move(b.rows);
      in.best_of = std::move(b.record);
      in.warnings.insert(in.warnings.end(), b.warnings.begin(), b.warnings.end());
    } else {
      in.rows = std::move(data.rows);
      for (auto& w : fit::check_replicates(in.rows)) in.warnings.push_back(std::move(w));
    }
    for (size_t i = 0; i < in.warnings.size() && i < 20; ++i)
      std::fprintf(stderr, "fit-law: warning: %s\n", in.warnings[i].c_str());
    if (in.warnings.size() > 20)
      std::fprintf(stderr, "fit-law: warning: ... and %zu more (all in fit.json input.warnings)\n", in.warnings.size() - 20);
    in.n = fit::resolve_inputs(in.rows, o.n_source, lo.columns);
    std::fprintf(stderr, "fit-law: note: N: %s\n", in.n.reason.c_str());
    fit::LawOutput result = fit::run_fit_law(std::move(in), o);
    const nlohmann::json& rec = result.record;
    auto is_warning = [&](const std::string& text) {
      for (const auto& w : rec["warnings"])
        if (w.get<std::string>().find(text) != std::string::npos) return true;
      return false;
    };
    if (rec["input"].contains("tokens_note"))
      std::fprintf(stderr, "fit-law: note: %s\n", rec["input"]["tokens_note"].get<std::string>().c_str());
    for (const auto& m : rec["models"])
      for (const auto& note : m["notes"])
        if (!is_warning(note.get<std::string>()))
          std::fprintf(stderr, "fit-law: note: %s: %s\n", m["name"].get<std::string>().c_str(),
                       note.get<std::string>().c_str());
    for (const auto& s : rec["skipped_models"])
      std::fprintf(stderr, "fit-law: note: skipped %s: %s\n", s["name"].get<std::string>().c_str(),
                   s["reason"].get<std::string>().c_str());
    for (const auto& w : rec["warnings"])
      std::fprintf(stderr, "fit-law: warning: %s\n", w.get<std::string>().c_str());
    std::string report = fit::render_record(result.record, format);  // also checks the format
    if (!out_path.empty()) write_output(out_path, result.record.dump(2) + "\n");
    if (!pred_path.empty()) write_output(pred_path, fit::predictions_csv(result.predictions));
    if (!is_stdout(out_path) && !is_stdout(pred_path)) write_output("-", report);
    return 0;
  });
}
