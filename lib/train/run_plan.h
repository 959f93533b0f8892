#pragma once
// The memory and cost plan (plan/memory_plan.h) of a run as `train` would execute it,
// and the bytes the run actually holds, side by side in summary.json "memory".
// Torch-free.
#include <cstdint>

#include <nlohmann/json.hpp>

#include "plan/memory_plan.h"
#include "train/train_config.h"

namespace shapelaw {

// world: data-parallel ranks. cuda and bf16 as train resolves --device and --precision.
PlanOptions plan_options(const TrainConfig& config, int world);

// Per rank, measured from the live tensors (weights, gradients, optimizer state after a
// step) and by the device's allocator (peak over the training steps of this process).
struct MeasuredMemory {
  int64_t weights = 0, gradients = 0, optimizer_state = 0, peak = 0;
  int64_t evaluation_peak = 0;  // while validating (mid-run and at the end)
  int64_t peak_reserved = -1;  // CUDA: the caching allocator's reserve at its peak; -1 on CPU
};

// {"plan": {...bytes per rank...}, "measured": {...}} for summary.json.
nlohmann::json memory_json(const Plan& plan, const MeasuredMemory& measured);

}  // namespace shapelaw
