#pragma once
// configure_optimizers: AdamW over parameter groups built from the parameterization's
// rules (model/parameterization.h): every tensor gets its rule's lr, weight-decay and
// eps multipliers; tensors whose settings coincide share one group, so SP has the
// classic two (matrices decayed, vectors not). Each step sets every group's lr to the
// schedule's base lr times its multiplier, then takes one (fused on CPU) AdamW step.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/model.h"
#include "train/train_config.h"

namespace shapelaw {

struct OptimizerGroup {
  std::string rules;               // the rules it holds, "embedding+hidden_matrix+head"
  std::vector<std::string> names;  // its tensors, in model order
  int64_t numel = 0;
  double lr_mult = 1, weight_decay = 0, eps = 0;  // absolute decay and eps
};

class Optimizer {
 public:
  Optimizer(TransformerImpl& model, const TrainConfig& config);
  void set_lr(double base_lr);
  void step(double clip_scale);  // gradients times clip_scale, one AdamW step
  torch::optim::AdamW& adamw() { return *adamw_; }
  const std::vector<OptimizerGroup>& groups() const { return groups_; }
  nlohmann::json groups_json() const;  // summary.json "param_groups", checked on resume

 private:
  std::vector<OptimizerGroup> groups_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
};

}  // namespace shapelaw
