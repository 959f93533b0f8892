#pragma once
// fit-law sweep: one study's answer to the paper's question from a depth x width sweep,
// whoever ran it (a published table with its own column names, the paper's 30, our
// summary.json files). Three parts, each in sweep.json (docs/formats.md):
//   depth_tests  the law-free test at matched tokens (fit/depth_test.h)
//   laws         every loss law fitted with runs as the resampling unit: leave-one-run-out
//                error, AICc, and the D_crit of each law with Phi with its run-bootstrap CI
//                against the paper's 2.43 ln W and the data's depth range
//   verdict      supported | refuted | undecided, by the rule in sweep_rule()
// README.md lays them out; the plot data and a gnuplot script go beside it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/analysis.h"
#include "fit/depth_test.h"
#include "fit/table.h"

namespace shapelaw::fit {

struct SweepOptions {
  LawOptions law;            // fit options; sweep defaults set by default_sweep_options()
  DepthTestOptions depth;
  std::string name;          // the study's label in the report ("" : the first input's name)
};
SweepOptions default_sweep_options();

// The laws a sweep compares: the paper's with Phi, no-phi, Kaplan, Chinchilla, and the
// width-depth rivals gemstones and inverse-depth.
std::vector<std::string> sweep_models();

// The checks a sweep table must pass, each one line naming file, line and field (Error):
// depth and width on every row, two depths at some width, tokens in one unit, no duplicate
// (run, tokens) row, one shape per run.
void check_sweep_rows(const std::vector<Row>& rows);

struct SweepResult {
  nlohmann::json sweep;                  // sweep.json
  nlohmann::json fit;                    // the fit record (fit.json) the laws came from
  std::vector<PredictionRow> predictions;
  DepthTest depth;
};

// rows: loaded (load_tables), checked (check_sweep_rows, before resolve_inputs so that a
// missing depth is named as such) and resolved (resolve_inputs) into `n`.
SweepResult run_sweep(std::vector<Row> rows, const std::vector<std::string>& files,
                      const std::vector<std::string>& warnings, const NChoice& n, const SweepOptions& options);

// The verdict's rule, in words (README and docs/formats.md say the same).
std::string sweep_rule();

}  // namespace shapelaw::fit
