#pragma once
// A run's checkpoint, found by run directory and step, with its configuration, and the
// shard data to use with it, checked to have the run's tokenizer (token ids that mean
// the words they meant in training): what `train eval` and `probe-grads measure` start
// from. Torch-free.
#include <string>

#include <nlohmann/json.hpp>

#include "records/run_summary.h"
#include "shards/dataset.h"
#include "train/train_config.h"

namespace shapelaw {

struct CheckpointRef {
  long long step = 0;
  std::string dir;      // .../checkpoints/step_<12 digits>
  std::string run_dir;  // the run's output directory (parent of checkpoints/)
  nlohmann::json state; // state.json
};

// run: a run directory (with checkpoints/), its checkpoints/, or one step_N directory;
// step -1 = the newest complete checkpoint. Error when absent (listing the steps there).
// A damaged newer checkpoint is skipped with "TOOL: warning: ..." on stderr (tool: the
// reader's name, as every tool prefixes its lines).
CheckpointRef locate_checkpoint(const std::string& run, long long step, const std::string& tool);

struct RunCheckpoint {
  CheckpointRef ref;
  TrainConfig config;      // from state.json, model validated
  records::RunSummary summary;  // the run's summary.json; empty when it has none (not finished)
};
RunCheckpoint open_run_checkpoint(const std::string& run, long long step, const std::string& tool);

// data ("" = the run's --data) opened and checked against the run's tokenizer (and
// tokenizer_model against the manifest, when given); Error naming the data otherwise.
TokenDataset open_run_data(const RunCheckpoint& run, const std::string& data, const std::string& tokenizer_model);

}  // namespace shapelaw
