#pragma once
// Every option of one training run (defaults = the paper's Table 5), its JSON form
// (recorded in checkpoints and summary.json), the learning-rate schedule, and the
// entry point of the trainer. Torch-free, so the CLI and tests compile quickly.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace shapelaw {

struct TrainConfig {
  // data and outputs
  std::string data;             // shard directory or its manifest.json
  std::string tokenizer_model;  // optional: checked against the manifest's tokenizer hash
  std::string out;              // output directory (metrics, checkpoints, summary)
  std::string run_id;           // default: the output directory's name
  std::string run_group;        // replicates of one configuration (other seeds) share it; "": none
  // model
  ModelConfig model;            // vocab_size 0 = take it from the manifest
  // optimization (Table 5)
  double lr = 3e-4, min_lr = 3e-5;
  int64_t warmup_steps = 2000;
  double warmup_fraction = -1;  // >= 0 overrides warmup_steps: fraction of the run
  double weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, grad_clip = 1.0;
  int64_t batch_tokens = 262144;  // global batch (256 x 1024), reached by accumulation
  int64_t micro_batch = 8;        // sequences per forward/backward (per rank)
  int64_t steps = 0;              // run length in optimizer steps, or:
  int64_t tokens = 0;             // run length in tokens (rounded up to whole steps)
  uint64_t seed = 42;
  // evaluation, logging, checkpoints
  int64_t val_every = 0;          // steps between validation passes (0: only at the end)
  int64_t val_tokens = 1 << 20;   // size of the fixed validation set
  int64_t log_every = 10;         // progress line on stderr
  int64_t checkpoint_every = 1000;
  int keep_checkpoints = 3;
  bool resume = false;            // require a checkpoint to resume from
  std::vector<int64_t> probe_steps;  // steps (1-based) whose per-layer grad norms go to grad_norms.csv
  // execution
  std::string device = "cpu";     // cpu | cuda
  std::string precision = "auto"; // auto (bf16 on cuda, fp32 on cpu) | fp32 | bf16
  int threads = 0;                // intra-op threads on CPU (0: all cores)
  int prefetch = 4;               // micro-batches buffered by the loader thread
  double peak_flops = 0;          // MFU denominator; 0 = measure a matmul peak at start
  // testing hooks: SIGKILL self at this step, "step" (after the step) or "checkpoint"
  // (inside the checkpoint write, before its rename)
  int64_t debug_kill_at_step = 0;
  std::string debug_kill_phase = "step";

  int64_t total_steps() const;     // steps, or ceil(tokens / batch_tokens)
  int64_t warmup() const;          // resolved warmup steps
  double lr_at(int64_t step) const;  // step 0-based: linear warmup, cosine to min_lr
  void validate() const;           // throws Error
};

nlohmann::json to_json(const TrainConfig& c);
TrainConfig train_config_from_json(const nlohmann::json& j);  // missing keys keep defaults
// The part of the config that fixes the math of a run: a checkpoint whose binding
// config differs from the current one is refused.
nlohmann::json binding_config(const TrainConfig& c);

// Runs (or resumes) the training described by config; returns the process exit code.
// Throws Error for every user-facing failure.
int run_training(const TrainConfig& config);

}  // namespace shapelaw
