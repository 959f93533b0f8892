#pragma once
// The optimizer (nanoGPT's configure_optimizers is the Optimizer constructor here): AdamW over parameter groups built from the parameterization's
// rules (model/parameterization.h): every tensor gets its rule's lr, weight-decay and
// eps multipliers; tensors whose settings coincide share one group, so SP has the
// classic two (matrices decayed, vectors not). Each step sets every group's lr to the
// schedule's base lr times its multiplier, then takes one (fused on CPU) AdamW step.
// With --zero 1 the same groups' settings drive a sharded AdamW (train/zero_optimizer.h):
// this rank keeps the moments of its slice of the parameters only; --zero 2 its slice of
// the gradients too (train/zero_gradients.h).
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "model/model.h"
#include "train/distributed.h"
#include "model/grad_norm.h"
#include "train/train_config.h"
#include "train/zero_optimizer.h"

namespace shapelaw {

struct OptimizerGroup {
  std::string rules;               // the rules it holds, "embedding+hidden_matrix+head"
  std::vector<std::string> names;  // its tensors, in model order
  int64_t numel = 0;
  double lr_mult = 1, weight_decay = 0, eps = 0;  // absolute decay and eps
};

// The factor that clips the gradients to max_norm (<= 0: no clipping), from their norm on
// the device: max_norm / (norm + 1e-6) where the norm exceeds max_norm, else exactly 1;
// computed in fp64 as the host would, so a CPU run's bits do not depend on where it is.
torch::Tensor clip_scale_for(const torch::Tensor& norm, double max_norm);

class Optimizer {
 public:
  Optimizer(TransformerImpl& model, const TrainConfig& config, const Distributed& dist = Distributed::single());
  void set_lr(double base_lr);
  // Around a step's backward passes: before the first micro-batch and after each one.
  // Only --zero 2 acts on them.
  void begin_gradients();
  void end_micro_batch();
  // The gradients averaged over the data-parallel ranks, and their global norm: all of
  // them all-reduced, or with ZeRO each rank's own slice reduce-scattered (a probe step
  // too). loss_sum is averaged too. The norm is a 0-dim fp64 tensor on the device: a GPU
  // step reads nothing back (the trainer reads it at its readouts, train/trainer.cpp).
  torch::Tensor reduce_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& loss_sum);
  // After reduce_gradients, with ZeRO (a collective: every rank calls it): each parameter's
  // squared gradient norm from every rank's slice, in params' order; without ZeRO empty
  // (every .grad is whole and averaged).
  std::vector<double> sharded_gradient_squares();
  // Gradients times clip_scale (a 0-dim tensor: clip_scale_for's, on the device), one AdamW
  // step: fused on the CPU (train/fused_adamw.h), ATen's fused multi-tensor kernel on a GPU.
  void step(const torch::Tensor& clip_scale);
  void step(double clip_scale) { step(torch::scalar_tensor(clip_scale, torch::kFloat64)); }
  const std::vector<OptimizerGroup>& groups() const { return groups_; }
  nlohmann::json groups_json() const;  // summary.json "param_groups", checked on resume
  bool sharded() const { return bool(sharded_); }
  int64_t state_bytes() const;  // the moments this rank holds, counted from its tensors
  // The gradients this rank holds between steps: every .grad, or with --zero 2 its slice.
  int64_t gradient_bytes(const std::vector<torch::Tensor>& params) const;
  // The checkpoint file of this rank's optimizer state: optimizer.pt (rank 0 only; ""
  // for the others), or with ZeRO optimizer-rank<r>.pt, every rank its own slice.
  std::string file_name(int rank) const;
  std::string save(const std::string& path) const;  // the file's SHA-256 (train/checkpoint_files.h)
  void load(const std::string& path, const torch::Device& device);

 private:
  std::vector<OptimizerGroup> groups_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
  std::unique_ptr<ShardedAdamW> sharded_;
  const Distributed* dist_;
};

}  // namespace shapelaw
