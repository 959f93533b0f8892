#pragma once
// The whole fit-law analysis on loaded rows: for each chosen law, multi-start fit,
// bootstrap, leave-one-out, extrapolation check, derived quantities (D_crit at
// widths, compute-optimal exponents); then model comparison and selection. The
// result is the fit.json record (docs/formats.md) plus per-row predictions.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fitter.h"
#include "fit/optimal.h"
#include "fit/table.h"

namespace shapelaw::fit {

struct LawOptions {
  std::vector<std::string> models;  // empty: every law for the response
  FitOptions fit;
  bool phi_relative = false;        // --phi relative|absolute
  int bootstrap = 1000;
  uint64_t seed = 42;
  std::vector<double> dcrit_widths = {256, 512, 1024, 1536, 2048, 2896, 4096, 8192, 12288, 18432};
  double holdout = 0.2;  // fraction of rows (largest N) held out by the extrapolation check
  bool loo = true;
  int loo_max_groups = 200;  // above it, LOO leaves out a seeded sample of this many groups (0: all; fit/loo.h)
  bool profile = true;  // profile-likelihood CIs of the nonlinear parameters
  OptimalOptions optimal;
  int optimal_draws = 200;  // bootstrap draws carried through the compute-optimal search
  bool weights_se = false;
  bool tau = false;              // input is a probe-grads tau table
  std::string n_source = "auto";
  std::string select = "aicc";   // aicc | aic | bic | loo
  std::vector<std::pair<std::string, double>> fixed;  // --fix NAME=VALUE
  std::vector<std::pair<std::string, std::vector<double>>> grids;  // --grid NAME=v1,v2,...
};

// The rows to fit and what was decided about them before fitting.
struct FitInput {
  std::vector<Row> rows;             // resolved (resolve_inputs); any order
  std::vector<std::string> files;    // inputs hashed into input_sha256 (any order)
  std::vector<std::string> warnings; // from loading, the replicate check, --best-of
  NChoice n;                         // how N was chosen
  nlohmann::json best_of;            // select_best_of's record, or null
};

struct PredictionRow {
  std::string model, run, source;
  long long line = 0;
  double depth = 0, width = 0, N = 0, T = 0, observed = 0, predicted = 0;
  double residual = 0;  // observed − predicted (the one sign convention of fit-law's outputs)
  double loo_predicted = 0, extrapolation_predicted = 0;  // NaN when absent
};

struct LawOutput {
  nlohmann::json record;
  std::vector<PredictionRow> predictions;
};

// The rows are put in canonical order first (table.h), and the files hashed in sorted
// order, so neither the order of the inputs nor the thread count changes the record.
LawOutput run_fit_law(FitInput input, const LawOptions& options);

}  // namespace shapelaw::fit
