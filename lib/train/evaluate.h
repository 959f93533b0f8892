#pragma once
// estimate_loss: the mean next-token loss of a model over a fixed set of windows, the
// one evaluation used at the end of a run, every --val-every steps and by other tools.
#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "model/model.h"
#include "shards/dataset.h"

namespace shapelaw {

// The first min(max(1, max_tokens / window), tokens / window) windows of `split`, in
// order, as int64 [n, window]; undefined when the split lacks a full window.
torch::Tensor load_eval_windows(const TokenDataset& dataset, const std::string& split, int64_t max_tokens,
                                int64_t window);

// Mean loss (nats/token) over the windows, micro windows at a time; NaN if undefined.
// Leaves the model in eval mode.
double estimate_loss(TransformerImpl& model, const torch::Tensor& windows, int64_t micro, const torch::Device& device,
                     bool bf16);

}  // namespace shapelaw
