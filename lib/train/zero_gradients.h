#pragma once
// ZeRO stage 2 (Rajbhandari et al. 2019): the gradients are sharded like the moments of
// stage 1 (train/zero_optimizer.h). Rank r keeps only the averaged gradient of its slice
// [r*S, (r+1)*S) of the flattened parameters; no rank ever holds all of them at once.
//
// How, during backward: a post-hook on each parameter's AccumulateGrad node (DeepSpeed's
// way, in LibTorch 1.13 and 2.x alike) copies the gradient autograd has just written into
// its bucket's flat staging buffer and frees .grad. The buckets are runs of consecutive
// parameters of about --bucket-mb; backward fills them roughly from the last to the
// first, so one or two stage at a time. A full bucket is summed over the ranks onto the
// owners of its elements (a reduce to each rank whose slice it overlaps: the bytes of a
// reduce-scatter), added into the owner's slice, and freed. With accumulation the slice
// sums every micro-batch's bucket; averaging over the ranks happens once per step.
//
// Gradient memory per rank: 4*S bytes plus the staging buckets and the one parameter's
// gradient autograd writes at a time, instead of 4*P. The sum over micro-batches is taken
// bucket by bucket instead of in .grad, so the last bits differ from stage 0 and 1.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "compat/torch_compat.h"
#include "train/distributed.h"

namespace shapelaw {

class ShardedGradients {
 public:
  // params in model order; this rank's slice [begin, end) of their flattening.
  ShardedGradients(std::vector<torch::Tensor> params, int64_t shard, int64_t begin, int64_t end,
                   const Distributed& dist);
  ~ShardedGradients();  // removes the hooks
  ShardedGradients(const ShardedGradients&) = delete;
  ShardedGradients& operator=(const ShardedGradients&) = delete;

  // Before a step's first micro-batch: the slice back to zero. A probe step is a step like
  // any other: its per-layer norms come from the slices (ShardedAdamW::gradient_squares).
  void begin_step();
  // After each micro-batch's backward: sends the buckets still staging (a parameter that
  // got no gradient counts as zeros).
  void end_micro_batch();
  // The slice divided by the ranks: the averaged gradients of [begin, end), fp32.
  const torch::Tensor& average();
  int64_t bytes() const;  // the slice this rank holds between steps

  void on_gradient(size_t param);  // called by the hooks

 private:
  struct Bucket {
    size_t first, last;      // its parameters [first, last)
    int64_t begin, end;      // its elements of the flattening
    size_t arrived = 0;      // its parameters whose gradient came this micro-batch
    torch::Tensor staging;   // [end - begin], while arrivals are pending
  };
  void send(Bucket& b);
  void attach_hooks();

  std::vector<torch::Tensor> params_;
  std::vector<int64_t> offset_;       // each parameter's first element in the flattening
  std::vector<size_t> bucket_of_;
  std::vector<bool> seen_;            // gradient arrived this micro-batch
  std::vector<Bucket> buckets_;
  std::vector<AutogradNodePtr> accumulators_;  // kept alive: they hold the hooks
  std::vector<uintptr_t> hook_keys_;
  const Distributed& dist_;
  int64_t shard_, begin_, end_;
  bool averaged_ = false;
  torch::Tensor slice_;  // [end - begin] fp32
};

}  // namespace shapelaw
