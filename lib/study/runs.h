#pragma once
// A study's runs as its reports see them: one row per summary.json (records/run_summary.h
// reads it), with the few numbers the statistics need. The reports read nothing else of a run.
#include <cstdint>
#include <string>
#include <vector>

namespace shapelaw::study {

struct Run {
  std::string path, run_id;
  // The configuration a run replicates: its run group (train --run-group, e.g. the seeds of
  // `make SEEDS=`) or its id, less a swept learning rate's and a seed's suffix (-lr3e-3, -s43),
  // so that every lr and seed of one grid row share it.
  std::string row;
  std::string param;  // sp, mup, completep
  int depth = 0, width = 0;
  double lr = 0;
  int64_t seed = 0;
  double val_loss = 0;
  double params_total = 0, params_non_embedding = 0, params_12dw2 = 0;
  double tokens = 0, wall_seconds = 0;
};

// "w16-d4-lr1e-2-s43" -> "w16-d4".
std::string row_of(const std::string& id);
// Throws Error naming the file and field when a number the study needs is missing.
Run read_run(const std::string& summary_path);
// Sorted by (width, depth, row, lr, seed, path): every output is independent of the order given.
std::vector<Run> read_runs(const std::vector<std::string>& summary_paths);

}  // namespace shapelaw::study
