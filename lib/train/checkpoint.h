#pragma once
// Reading `train` checkpoints from other tools (probe-grads, evaluation): see
// docs/formats.md, "train outputs". Implemented in checkpointer.cpp.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/model.h"

namespace shapelaw {

// Complete checkpoints (with COMPLETE marker) under <out>/checkpoints, oldest first:
// (step, directory). Empty if there are none.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir);

inline constexpr const char* kCheckpointFormat = "shapelaw.checkpoint";
inline constexpr int kCheckpointVersion = 1;

// The checkpoint's state.json (step, tokens, cursor, config, ...), format and version checked
// by records::read_versioned_json; throws Error (also without a COMPLETE marker).
nlohmann::json read_checkpoint_state(const std::string& checkpoint_dir);

// The model of a checkpoint, on device, in eval mode; its ModelConfig is taken from
// state.json's config. Throws Error naming the directory on any failure.
Transformer load_checkpoint_model(const std::string& checkpoint_dir, const torch::Device& device);

}  // namespace shapelaw
