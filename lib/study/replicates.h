#pragma once
// Replicates in a study: the runs of one configuration (grid row and learning rate) that
// differ only in the seed. Their mean is the configuration's loss; their spread, pooled over
// every replicated configuration, is the seed-to-seed noise every excess is judged against.
//   mean_c = Σ_i y_ci / n_c,   s² = Σ_c Σ_i (y_ci − mean_c)² / Σ_c (n_c − 1)
#include <string>
#include <vector>

#include "study/runs.h"

namespace shapelaw::study {

struct Cell {
  std::string row;
  int depth = 0, width = 0;
  double lr = 0;
  int n = 0;
  double mean = 0;
  double sd = -1;  // between the seeds; < 0 for a single run
  double ss = 0;   // Σ (y − mean)², for pooling
  std::vector<std::string> run_ids, paths;
};
// One cell per (row, lr), sorted by (width, depth, row, lr).
std::vector<Cell> cells_of(const std::vector<Run>& runs);

struct SeedSpread {
  bool available = false;
  double sd = 0;
  int df = 0;
  std::string source;  // where the SD comes from, said in every report
};
// Pooled over cells with two or more runs; unavailable when there are none.
SeedSpread pooled_spread(const std::vector<Cell>& cells);

// Per row, the learning rate with the lowest mean loss (fit/best_of.h's rule: ties to the
// smaller lr; a best at an end of the row's lrs is flagged "smallest"/"largest").
struct BestLr {
  Cell best;
  std::string edge;  // "", "smallest", "largest"
  bool single = false;
  std::vector<double> tried;
};
std::vector<BestLr> best_lr_per_row(const std::vector<Cell>& cells);

}  // namespace shapelaw::study
