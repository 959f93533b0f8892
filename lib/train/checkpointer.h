#pragma once
// Writing and resuming a run's checkpoints (readers for other tools: train/checkpoint.h).
// <out>/checkpoints/step_<12 digits>/{model.pt, optimizer.pt, rng.pt, state.json, SHA256SUMS,
// COMPLETE} is written into .tmp-step_<n>-<pid>/, renamed, then COMPLETE is written: a
// directory without COMPLETE is ignored and removed. A write that fails (a full disk)
// removes its temporary directory and leaves the earlier checkpoints as they were. Resume restores model, optimizer moments,
// step, tokens, data cursor, losses and every RNG, after checking that the checkpoint
// was made by the same configuration, data, world size and parameter groups.
// With ZeRO (--zero 1 or 2) every rank also writes its optimizer slice, optimizer-rank<r>.pt,
// into the same temporary directory (.tmp-step_<n>, named alike on every rank); rank 0
// renames it and writes COMPLETE only after every rank has reported its slice written.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/model.h"
#include "shards/dataset.h"
#include "train/distributed.h"
#include "train/optimizer.h"

namespace shapelaw {

// Where a run is: what a checkpoint stores besides the tensors.
struct TrainState {
  int64_t step = 0, tokens = 0;
  WindowSampler::Cursor cursor;
  std::vector<double> losses;  // train loss of every step so far
  double wall_before = 0;      // seconds spent by earlier processes of this run
};

// What a checkpoint must agree with to be resumed (and is recorded in it).
struct RunIdentity {
  nlohmann::json binding_config, binding_defaults;  // defaults: a key an older checkpoint lacks may equal them
  nlohmann::json param_groups;
  std::string data_manifest_sha256, tokenizer_sha256;
  int world_size = 1;
  std::string tokenizer_kind;  // recorded, not compared: the hash already tells tokenizers apart
};

class Checkpointer {
 public:
  // writes = false (--no-checkpoints): a run that leaves no checkpoint; it still resumes
  // from complete ones already in out_dir.
  Checkpointer(std::string out_dir, int keep, const Distributed& dist, bool writes = true);
  const std::string& dir() const { return dir_; }
  bool writes() const { return writes_; }
  std::vector<std::pair<int64_t, std::string>> complete() const;  // (step, dir), oldest first
  bool holds(int64_t step) const;  // the newest complete checkpoint is of this step

  // Loads the newest complete checkpoint whose files match SHA256SUMS into model,
  // optimizer and the RNGs after checking it against `id`; a damaged newer one is moved
  // aside with a warning. Returns its directory, "" when there is none. Throws Error on a
  // mismatch, or when every checkpoint is damaged.
  std::string resume(Transformer& model, Optimizer& optimizer, const torch::Device& device, const RunIdentity& id,
                     TrainState& state, const std::function<void(const std::string&)>& warn = {}) const;
  // Called by every rank; without ZeRO only rank 0 writes; nothing when !writes().
  // wall_seconds: the run's time so far; `config` is the full config (recorded);
  // before_rename is a testing hook (SIGKILL inside the write).
  void save(const TrainState& state, double wall_seconds, Transformer& model, const Optimizer& optimizer,
            const torch::Device& device, const RunIdentity& id, const nlohmann::json& config,
            const std::function<void()>& before_rename = {}) const;
  // Renames the complete checkpoints of step >= from_step to <prefix>step_N (no longer
  // resumed or listed: a diverged run's weights); returns their new paths. Rank 0 only.
  std::vector<std::string> set_aside(int64_t from_step, const std::string& prefix) const;

 private:
  std::string dir_;
  int keep_;
  bool writes_;
  const Distributed* dist_;  // the ranks that write together
  bool leader_;
};

// The differences between two JSON objects as "key: checkpoint X, now Y" lines.
// Keys missing on the checkpoint side are no difference when `now` equals `defaults`.
std::vector<std::string> config_differences(const nlohmann::json& checkpoint, const nlohmann::json& now,
                                            const nlohmann::json& defaults, const std::string& prefix = "");

}  // namespace shapelaw
