#pragma once
// Torch side of `probe-grads measure`, exposed for tests: gradient norms of one batch
// and of several, through model/model.h's component_grad_norms (the function
// `train --probe-steps` uses), and checkpoint loading with shape checks.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/model.h"
#include "probe/profile.h"

namespace shapelaw::probe {

// Zeroes the gradients, backpropagates sum_i loss(micro_i) / n (the gradient of the
// batch's mean loss, accumulated exactly as train does), returns the per-component
// norms. windows: [m_i, T+1] int64 tensors on the model's device. loss_out: mean loss.
std::vector<ComponentNorm> batch_grad_norms(TransformerImpl& model, const std::vector<torch::Tensor>& micro_windows,
                                            bool bf16, double* loss_out = nullptr);

// Mean and sample sd over batches, in component_grad_norms' row order; ratios filled.
GradProfile average_norms(const std::vector<std::vector<ComponentNorm>>& per_batch, int depth);

// Loads model.pt into a model built from `config`, refusing a file whose tensors do not
// match it (missing, extra or differently shaped tensors). Throws Error naming the file.
void load_model_checked(TransformerImpl& model, const std::string& path, const torch::Device& device);

}  // namespace shapelaw::probe
