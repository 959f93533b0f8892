#include "train/optimizer.h"

#include "model/parameterization.h"
#include "train/fused_adamw.h"

namespace shapelaw {

Optimizer::Optimizer(TransformerImpl& model, const TrainConfig& c) {
  const Multipliers m = parameterization_multipliers(c.model);
  std::vector<std::vector<torch::Tensor>> tensors;
  for (auto& item : model.named_parameters()) {
    const GroupRule& rule = rule_for_parameter(m, item.key(), int(item.value().dim()));
    const double lr_mult = rule.lr, wd = rule.weight_decay == 0 ? 0.0 : c.weight_decay * rule.weight_decay,
                 eps = c.eps * rule.eps;
    size_t g = 0;
    while (g < groups_.size() && !(groups_[g].lr_mult == lr_mult && groups_[g].weight_decay == wd && groups_[g].eps == eps))
      ++g;
    if (g == groups_.size()) {
      groups_.push_back({rule.name, {}, 0, lr_mult, wd, eps});
      tensors.emplace_back();
    } else if (("+" + groups_[g].rules + "+").find("+" + rule.name + "+") == std::string::npos) {
      groups_[g].rules += "+" + rule.name;
    }
    groups_[g].names.push_back(item.key());
    groups_[g].numel += item.value().numel();
    tensors[g].push_back(item.value());
  }
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto options = std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(c.lr * groups_[g].lr_mult)
                                                                    .betas({c.beta1, c.beta2})
                                                                    .eps(groups_[g].eps)
                                                                    .weight_decay(groups_[g].weight_decay));
    param_groups.emplace_back(tensors[g], std::move(options));
  }
  adamw_ = std::make_unique<torch::optim::AdamW>(param_groups, torch::optim::AdamWOptions(c.lr));
}

void Optimizer::set_lr(double base_lr) {
  auto& param_groups = adamw_->param_groups();
  for (size_t g = 0; g < param_groups.size(); ++g)
    static_cast<torch::optim::AdamWOptions&>(param_groups[g].options()).lr(base_lr * groups_[g].lr_mult);
}

void Optimizer::step(double clip_scale) { adamw_step(*adamw_, clip_scale); }

nlohmann::json Optimizer::groups_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (auto& g : groups_)
    out.push_back({{"rules", g.rules},
                   {"tensors", g.names.size()},
                   {"params", g.numel},
                   {"lr_mult", g.lr_mult},
                   {"weight_decay", g.weight_decay},
                   {"eps", g.eps}});
  return out;
}

}  // namespace shapelaw
