#include "train/optimizer.h"

#include <cmath>
#include <filesystem>

#include "model/parameterization.h"
#include "train/checkpoint_save.h"
#include "train/fused_adamw.h"
#include "util/error.h"

namespace shapelaw {

torch::Tensor clip_scale_for(const torch::Tensor& norm, double max_norm) {
  torch::NoGradGuard no_grad;
  const torch::Tensor one = torch::ones_like(norm);
  if (max_norm <= 0) return one;
  return torch::where(norm > max_norm, torch::full_like(norm, max_norm) / (norm + 1e-6), one);
}

Optimizer::Optimizer(TransformerImpl& model, const TrainConfig& c, const Distributed& dist) : dist_(&dist) {
  const Multipliers m = parameterization_multipliers(c.model);
  std::vector<std::vector<torch::Tensor>> tensors;
  std::vector<torch::Tensor> in_order;
  std::vector<ShardSettings> settings;
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
    in_order.push_back(item.value());
    settings.push_back({lr_mult, wd, eps});
  }
  if (c.zero >= 1) {
    sharded_ = std::make_unique<ShardedAdamW>(in_order, settings, c.beta1, c.beta2, dist, c.zero);
    return;
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
  if (sharded_) return sharded_->set_lr(base_lr);
  auto& param_groups = adamw_->param_groups();
  for (size_t g = 0; g < param_groups.size(); ++g)
    static_cast<torch::optim::AdamWOptions&>(param_groups[g].options()).lr(base_lr * groups_[g].lr_mult);
}

void Optimizer::begin_gradients() {
  if (sharded_) sharded_->begin_gradients();
}

void Optimizer::end_micro_batch() {
  if (sharded_) sharded_->end_micro_batch();
}

int64_t Optimizer::gradient_bytes(const std::vector<torch::Tensor>& params) const {
  int64_t bytes = sharded_ ? sharded_->gradient_shard_bytes() : 0;
  for (auto& p : params)
    if (p.grad().defined()) bytes += p.grad().numel() * int64_t(p.grad().element_size());
  return bytes;
}

std::vector<double> Optimizer::sharded_gradient_squares() {
  return sharded_ ? sharded_->gradient_squares() : std::vector<double>();
}

torch::Tensor Optimizer::reduce_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& loss_sum) {
  if (!sharded_) {
    dist_->average_gradients(params, loss_sum);
    return gradient_norm(params, /*foreach=*/!params.empty() && !params.front().device().is_cpu());
  }
  dist_->sum_over_ranks(loss_sum);
  loss_sum.div_(double(dist_->world));
  return sharded_->reduce_gradients();
}

void Optimizer::step(const torch::Tensor& clip_scale) {
  if (sharded_) return sharded_->step(clip_scale);
  adamw_step(*adamw_, clip_scale);
}

int64_t Optimizer::state_bytes() const {
  if (sharded_) return sharded_->state_bytes();
  int64_t bytes = 0;
  for (auto& entry : adamw_->state()) {
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*entry.second);
    for (const torch::Tensor& t : {s.exp_avg(), s.exp_avg_sq(), s.max_exp_avg_sq()})
      if (t.defined()) bytes += t.numel() * int64_t(t.element_size());
  }
  return bytes;
}

std::string Optimizer::file_name(int rank) const {
  if (sharded_) return ShardedAdamW::file_name(rank);
  return rank == 0 ? "optimizer.pt" : "";
}

std::string Optimizer::save(const std::string& path) const {
  if (sharded_) return sharded_->save(path);
  return save_checkpoint_file(*adamw_, path);
}

void Optimizer::load(const std::string& path, const torch::Device& device) {
  if (sharded_) {
    if (!std::filesystem::exists(path))
      throw Error(path + ": missing (a checkpoint written without --zero, or by another number of ranks)");
    return sharded_->load(path);
  }
  torch::load(*adamw_, path, device);
}

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
