#pragma once
// Data parallelism over torch's c10d process groups, configured from the environment
// torchrun or an srun step sets (train/launch_env.h). world == 1 needs no process group
// unless WORLD_SIZE=1 is set and SHAPELAW_DIST_BACKEND names one (a one-rank check of that backend).
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/launch_env.h"

namespace shapelaw {

struct Distributed {
  int rank = 0, world = 1, local_rank = 0;
  LaunchEnv launch;             // who launched this process (rank, world, store address)
  std::shared_ptr<void> group;  // the c10d process group (opaque here); null: no collectives
  // Collectives go over flattened tensors in buckets of about this size (--bucket-mb):
  // fewer, larger calls against the memory of one flat copy.
  int64_t bucket_bytes = int64_t(25) << 20;

  // Backend: nccl for --device cuda when built with it, else gloo; the environment
  // variable SHAPELAW_DIST_BACKEND=gloo|nccl overrides.
  static Distributed from_env(const std::string& device);
  static int world_from_env();  // the launch environment's world (default 1), connecting to nothing
  static const Distributed& single();  // one process, no collectives
  static bool available();  // whether this build can run world > 1
  static bool has_backend(const std::string& name);  // "gloo", "nccl"
  static std::string backends();                       // "gloo, nccl", "" if none
  // rank 0's parameters to every rank
  void broadcast_parameters(const std::vector<torch::Tensor>& params) const;
  // mean of every gradient (bucketed all-reduce) and of the loss sum, across ranks
  void average_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& loss_sum) const;
  // ZeRO: rank r holds the up-to-date values of [r*shard, (r+1)*shard) of the flattened
  // params (train/flat_params.h); afterwards every rank holds all of them. Gathered in
  // chunks of about bucket_bytes.
  void all_gather_shards(const std::vector<torch::Tensor>& params, int64_t shard) const;
  // ZeRO: this rank's slice [rank*shard, (rank+1)*shard) of the flattened gradients
  // replaced, in place, by its average over the ranks (the rest keep this rank's own,
  // unaveraged values). NCCL reduce-scatters: each rank receives only its slice, so with
  // the all-gather of the parameters a step moves as many bytes as one all-reduce. Gloo
  // (LibTorch 1.13 has no reduce-scatter there) all-reduces each chunk and keeps the slice.
  void reduce_scatter_gradients(const std::vector<torch::Tensor>& grads, int64_t shard) const;
  // t, in place, summed over the ranks
  void sum_over_ranks(torch::Tensor& t) const;
  // t on rank root, in place, summed over the ranks (the others' t is left undefined in
  // content); t contiguous. ZeRO-2 sends each gradient bucket's pieces to their owners.
  void reduce_to(torch::Tensor& t, int root) const;
  // Sum of value over the ranks (a barrier that also agrees on a count, e.g. of failures).
  int64_t sum(int64_t value, const torch::Device& device) const;
  // Throws Error on every rank when the ranks are not one run: their `identity` (the binding
  // config and the data's content) differs. Two launches given one rendezvous address (one
  // MASTER_PORT for both, or a port two Slurm steps derive alike) would otherwise pair the
  // ranks of different runs, and a pair that completes averages two runs' gradients silently.
  void check_one_run(const std::string& identity, const torch::Device& device) const;
};

}  // namespace shapelaw
