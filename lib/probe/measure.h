#pragma once
// `probe-grads measure`: per-layer gradient norms of a `train` checkpoint on a fixed
// slice of data. Torch-free interface (the CLI and tests include it without LibTorch
// headers); the torch side is in measure.cpp / measure_torch.h.
//
// Two data sources:
//  - validation (default): a seeded WindowSampler over the validation split (seq_len+1
//    token windows), the first batches x batch_size windows of its first epoch; each
//    batch's gradient is that of its mean loss; norms are averaged over the batches.
//  - --replay-train-step: the exact batch train consumes right after the checkpoint
//    (train split, the checkpoint's sampler cursor, the run's micro-batch and
//    accumulation). Its norms equal train's grad_norms.csv line of step `step + 1`
//    (train logs step s with the weights after s-1 updates).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/profile.h"

namespace shapelaw::probe {

struct MeasureOptions {
  std::string run;              // run directory (with checkpoints/), its checkpoints/, or one step_N directory
  long long step = -1;          // checkpoint step (-1: the newest complete checkpoint)
  std::string data;             // shard directory or manifest (default: the run's --data)
  std::string tokenizer_model;  // optional: tokenizer (model file or GPT-2 directory) checked against the manifest
  std::string split = "validation";
  int batches = 8;              // K
  int batch_size = 8;           // sequences per batch
  int micro_batch = 0;          // sequences per forward/backward (0: the whole batch)
  uint64_t seed = 1234;         // order of the windows
  bool replay_train_step = false;
  std::string device = "cpu";   // cpu | cuda | cuda:N
  std::string precision;        // fp32 | bf16 (cuda only) | "" = fp32 (replay: the run's)
  int threads = 0;              // CPU intra-op threads (0: all cores)
};

GradProfile measure_gradients(const MeasureOptions& options);

}  // namespace shapelaw::probe
