#pragma once
// ZeRO stage 1 (Rajbhandari et al. 2019) over the data-parallel group: the parameters,
// in model order, are seen as one flat vector of P elements; rank r keeps the AdamW
// moments of its slice [r*S, min((r+1)*S, P)), S = ceil(P / world), and after the
// gradients are averaged it updates only that slice of the parameters, then every rank
// all-gathers the updated slices. Moments per rank: 8 * S bytes instead of 8 * P.
// The update is AdamW's arithmetic element by element (train/fused_adamw.h), so the
// parameters equal those of the unsharded optimizer bit for bit.
// Checkpoints: each rank saves its own slice (optimizer-rank<r>.pt, see docs/formats.md);
// loading checks that the slice is the same one (same world size and parameter count).
// Stage 2 (train/zero_gradients.h) shards the gradients on the same slices: the update
// then reads the rank's averaged gradient slice instead of .grad.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/distributed.h"
#include "train/fused_adamw.h"
#include "train/zero_gradients.h"

namespace shapelaw {

// A tensor's settings, from its parameter group (train/optimizer.h).
struct ShardSettings {
  double lr_mult, weight_decay, eps;
};

class ShardedAdamW {
 public:
  // stage 1: moments sharded; 2: gradients too
  ShardedAdamW(std::vector<torch::Tensor> params, std::vector<ShardSettings> settings, double beta1, double beta2,
               const Distributed& dist, int stage = 1);
  void set_lr(double base_lr) { lr_ = base_lr; }
  // Stage 2: before a step's micro-batches, after each one (train/zero_gradients.h).
  void begin_gradients();
  void end_micro_batch();
  // This rank's slice of the gradients averaged over the ranks (stage 1: reduce-scattered
  // in place, the rest of .grad left unaveraged; stage 2: its slice, already summed during
  // backward); returns the norm of all the averaged gradients, from every rank's slice, a
  // 0-dim fp64 tensor on the device (nothing read back to the host).
  torch::Tensor reduce_gradients();
  // After reduce_gradients, on every rank (a collective): each parameter's squared norm of
  // its averaged gradient, summed from every rank's slice. A probe step's per-layer norms
  // come from these, so it holds no more gradient bytes than any other step.
  std::vector<double> gradient_squares();
  // One step of this rank's slice with gradients multiplied by clip_scale, a 0-dim tensor
  // on the device (gradients already averaged over the ranks), then the all-gather of the
  // parameters.
  void step(const torch::Tensor& clip_scale);
  std::vector<torch::Tensor> gradients() const;  // every parameter's (throws if one has none)
  int64_t state_bytes() const;  // the moments this rank holds
  int64_t gradient_shard_bytes() const { return grads_ ? grads_->bytes() : 0; }
  int64_t shard_begin() const { return begin_; }
  int64_t shard_end() const { return end_; }
  // One file per rank, written to path atomically (temporary name, then rename).
  std::string save(const std::string& path) const;  // the file's SHA-256
  void load(const std::string& path);  // throws Error naming the file and what differs
  static std::string file_name(int rank);

 private:
  std::vector<torch::Tensor> params_;
  std::vector<ShardSettings> settings_;
  double lr_ = 0, beta1_, beta2_;
  const Distributed& dist_;
  int64_t total_ = 0, shard_ = 0, begin_ = 0, end_ = 0, steps_ = 0;
  torch::Tensor m_, v_;  // [end - begin] fp32 on the parameters' device
  std::unique_ptr<ShardedGradients> grads_;  // stage 2
  bool sliced_gradients() const { return bool(grads_); }
  AdamWHyper hyper(const ShardSettings& set) const;  // the group's hyperparameters at this step's lr
};

}  // namespace shapelaw
