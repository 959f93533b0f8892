#pragma once
// The whole fit-law analysis on loaded rows: for each chosen law, multi-start fit,
// bootstrap, leave-one-out, extrapolation check, derived quantities (D_crit at
// widths, compute-optimal exponents); then model comparison and selection. Each law's
// analysis is a typed LawAnalysis, written to JSON apart (law_json); the result is the
// fit.json record (docs/formats.md) plus per-row predictions. The laws themselves are
// fit/laws.h.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fitter.h"
#include "fit/identification.h"
#include "fit/loo.h"
#include "fit/optimal.h"
#include "fit/profile.h"
#include "fit/replicates.h"
#include "fit/resample.h"
#include "fit/stats.h"
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

// A bootstrap summary of one quantity: the 2.5% and 97.5% percentiles and the SD of the
// finite draws (NaN where there are too few).
struct Spread {
  double lo = std::numeric_limits<double>::quiet_NaN();
  double hi = std::numeric_limits<double>::quiet_NaN();
  double sd = std::numeric_limits<double>::quiet_NaN();
};
Spread spread(const std::vector<double>& draws);

// The data as every law sees it, decided once before any law is fitted.
struct PreparedData {
  std::vector<Point> points;   // canonical row order
  std::vector<int> groups;     // resampling group of each row (a run, a configuration, or the row)
  size_t n_groups = 0;
  bool have_groups = false;    // the rows name groups: bootstrap and LOO resample them
  std::string resample_unit;   // "run" (rows sharing a run), "group" (--col group) or "row"
  bool shapes = false;         // every row has a depth and a width
  bool D_varies = false, W_varies = false, N_varies = false, T_varies = false;
  size_t T_known = 0;          // rows with tokens
  std::string T_note;          // why the data term is not identifiable, if it is not
  PureError pure_error;        // replicates' noise floor (none for τ tables)
};

// One law fitted and examined: fit.json's models[] entry is law_json of it.
struct LawAnalysis {
  Model model;
  FitResult fit;
  Identification identification;
  bool evaluated = false;  // every parameter held: evaluated, not fitted (no bootstrap)
  BootstrapResult bootstrap;
  std::vector<ProfileInterval> profiles;  // per parameter; computed for the free nonlinear ones
  bool loo_done = false;
  LeaveOneOut loo;
  Extrapolation extrapolation;
  std::vector<double> observed, predicted;  // per row, the response
  std::vector<double> extrapolation_predicted;  // per row; NaN where not held out
  Metrics metrics;
  bool lack_of_fit_done = false;  // replicates exist
  LackOfFit lack_of_fit;
  int params_at_bound = 0;        // free parameters pinned at a bound (no lack-of-fit df)
  struct DcritAt {
    double width = 0, estimate = 0;
    Spread ci;
  };
  std::vector<DcritAt> dcrit_at;        // laws with D_crit(W): at LawOptions::dcrit_widths
  std::vector<size_t> on_kink;          // rows whose depth is exactly D_crit(W)
  struct Derived {
    std::string name;
    double estimate = 0;
    Spread ci;
  };
  std::vector<Derived> derived;         // the law's own derived quantities, its order
  bool alpha_near_zero = false;         // Box-Cox laws: A and the paper's constant are not estimates
  bool has_optimal = false;             // loss laws: the compute-optimal search ran
  OptimalCurve optimal;
  std::vector<OptimalCurve> optimal_draws;  // the same search on bootstrap draws
  double seconds = 0;                   // fitting and analysing it
  // "NAME: the best of K starts did not converge (...)" or "" when it converged
  std::string convergence_warning() const;
};

// Whether some run has more than one row (checkpoints of one run) and no row names a group:
// then the runs are the resampling groups.
bool runs_repeat(const std::vector<Row>& rows);

// The record of one law (fit.json models[]); rows name the held-out runs.
nlohmann::json law_json(const LawAnalysis& law, const PreparedData& data, const std::vector<Row>& rows,
                        const LawOptions& options);

// The rows are put in canonical order first (table.h), and the files hashed in sorted
// order, so neither the order of the inputs nor the thread count changes the record.
LawOutput run_fit_law(FitInput input, const LawOptions& options);

}  // namespace shapelaw::fit
