#pragma once
// `train eval`: a checkpoint of a run evaluated on any split of any shard set made with
// the run's tokenizer (checked): the mean next-token loss over the split's first
// windows, as train's final validation computes it (train/evaluate.h), and on request
// each document's loss. Torch-free interface.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace shapelaw {

struct RunEvalOptions {
  std::string run;              // run directory (train --out), its checkpoints/, or one step_N directory
  long long step = -1;          // checkpoint step; -1 = the newest complete one
  std::string data;             // shard directory or manifest; "" = the run's --data
  std::string tokenizer_model;  // optional: checked against the manifest
  std::string split = "test";
  int64_t max_tokens = -1;      // -1: the run's --val-tokens; 0: the whole split
  bool per_document = false;
  std::string device = "cpu";
  int threads = 0;              // CPU intra-op threads (0: all cores)
};

// The evaluation record (docs/formats.md, "train eval"); throws Error.
nlohmann::json evaluate_run(const RunEvalOptions& options);

}  // namespace shapelaw
