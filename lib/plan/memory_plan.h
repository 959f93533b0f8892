#pragma once
// What one training run needs per rank, before anything is allocated: the bytes of the
// model state (weights, gradients, AdamW moments, with ZeRO sharding over the
// data-parallel ranks), of the activations of one micro-batch (with and without
// recomputation, for the attention kernel in use) and of the output head; the largest
// micro-batch that fits a GPU; and the FLOPs, time and GPU-hours of the run.
//
// The terms follow what `train` allocates, tensor by tensor (docs/architecture.md,
// "The memory plan"): state bytes exactly, activations as the tensors autograd saves.
// Torch-free, so tools and tests can plan a 7B model on any machine.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace shapelaw {

struct PlanOptions {
  ModelConfig model;
  int64_t micro_batch = 8;        // sequences per forward/backward per rank
  int64_t batch_tokens = 262144;  // global batch, reached by accumulation
  int64_t steps = 0;              // optimizer steps of the run
  int world = 1;                  // data-parallel ranks
  int zero = 0;                   // 0: plain data parallel; 1: moments sharded; 2: gradients too
  int64_t bucket_bytes = int64_t(25) << 20;  // collective buckets (--bucket-mb)
  bool activation_checkpointing = false;
  // how many --probe-steps: each is planned as a normal step, as it runs (under ZeRO the
  // per-layer norms come from the ranks' gradient slices, no gradient is kept whole)
  int64_t probe_steps = 0;
  bool cuda = false;              // --device cuda: fused (flash) attention, unfused head loss
  bool bf16 = false;              // bf16 autocast (weights and optimizer stay fp32)
  // bytes per GPU the plan must fit in: an H100 SXM 80GB's total as nvidia-smi reports it
  // (81559 MiB); 80 GiB would be more than the card has
  double gpu_memory = 81559.0 * (1ull << 20);
  // The caching allocator reserves more than it hands out (its blocks are rounded and
  // fragment): the plan asks for the allocated peak times (1 + this) on CUDA.
  double reserve_fraction = 0.10;
  double mfu = 0.40;              // model FLOPs utilization assumed for time and GPU-hours
  double peak_flops = 989e12;     // per GPU (H100 SXM dense bf16)

  void validate() const;  // throws Error naming the option
};

// Activations of one micro-batch, bytes per rank.
struct ActivationBytes {
  int64_t per_layer = 0;      // saved by one block for its backward
  int64_t layer_input = 0;    // a block's input (what recomputation keeps per block)
  int64_t layer_backward = 0;  // above per_layer at the peak of one block's backward
  int64_t outside_blocks = 0;  // embedding output kept to the end, final norm
  int64_t head = 0;           // peak of the output head and loss (logits and their gradient)
  int64_t weight_copies = 0;  // bf16 autocast: the cached bf16 copies of the matmul weights
  int64_t without_recompute = 0;  // peak over forward and backward
  int64_t with_recompute = 0;
  // Evaluating one micro-batch without gradients (validation, train eval): one block's
  // tensors at a time beside the residual stream, then the head's logits and
  // log-probabilities (on a GPU one chunk of rows at a time: model/head_loss.h).
  int64_t evaluation = 0;
};

ActivationBytes activation_bytes(const PlanOptions& options, int64_t micro_batch);

struct Plan {
  PlanOptions options;
  ParamCounts params;
  int64_t sequences_per_rank = 0;  // per optimizer step
  int64_t accumulation = 0;        // micro-batches per rank per step
  int64_t steps = 0, tokens = 0;
  // per rank, bytes
  int64_t weights = 0, gradients = 0, moments = 0;
  int64_t buffers = 0;  // the collectives' two buckets (world > 1)
  ActivationBytes activations;
  int64_t activations_used = 0;  // with or without recompute, as the options say
  int64_t peak = 0;              // state + activations_used: bytes allocated to tensors at the peak
  int64_t evaluation_peak = 0;   // state + activations.evaluation: while validating
  // What a CUDA run holds beyond its tensors (0 on CPU): the allocator's reserve over the
  // peak, and the runtime's own memory outside the allocator (runtime_overhead_bytes).
  int64_t reserve = 0, runtime = 0;
  int64_t required = 0;          // max(peak, evaluation_peak) + reserve + runtime
  int64_t margin = 0;            // gpu_memory - required (negative: does not fit)
  bool fits = false;             // required <= gpu_memory
  // Host memory a rank holds at its start: `train` builds and initialises the whole fp32
  // model on the CPU (the same weights on every device) before it moves to the GPU, and a
  // ZeRO resume reads the rank's moment slice into host memory before it moves too.
  // Schedulers that limit memory per job (Slurm's --mem-per-gpu) must allow it.
  int64_t host = 0;
  int64_t max_micro_batch = 0;   // largest divisor of sequences_per_rank that fits (0: none)
  // compute
  double model_flops_per_token = 0;  // model/model_config.h's flops_per_token
  double flops_per_step = 0;         // executed, recomputation included
  double flops_per_run = 0;
  double seconds = 0, gpu_hours = 0;  // at mfu x peak_flops per GPU
};

// Memory a CUDA process holds outside the caching allocator: the CUDA context with the
// loaded kernels (PyTorch's, cuBLAS's, cuDNN's: 0.5-1 GB measured on H100s), cuBLAS's
// and cuBLASLt's workspaces, and with world > 1 NCCL's channel buffers (NCCL_BUFFSIZE
// 4 MiB per channel and direction, up to 32 channels, plus its proxy). 0 on CPU.
int64_t runtime_overhead_bytes(const PlanOptions& options);

// Throws Error when the batch does not divide into micro-batches and ranks.
Plan make_plan(const PlanOptions& options);

nlohmann::json to_json(const Plan& plan);
std::string format_plan(const Plan& plan);  // the human table

// "80GiB", "141GB", "85899345920": bytes; throws Error naming the text.
double parse_byte_size(const std::string& text);
std::string format_bytes(double bytes);  // "26.9 GB" (decimal units, as GPU vendors state)
std::string format_signed_bytes(double bytes);  // "-1.2 GB" below zero (a margin)

}  // namespace shapelaw
