#pragma once
// Every option of one training run (defaults = the paper's Table 5) and its one table of
// rows (visit_train_options): the CLI, the JSON form (checkpoints, summary.json) and the
// resume check are derived from it. Also the learning-rate schedule and the trainer's
// entry point. Torch-free, so the CLI and tests compile quickly.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace shapelaw {

struct TrainConfig {
  // data and outputs
  std::string data;             // shard directory or its manifest.json
  std::string tokenizer_model;  // optional: checked against the manifest's tokenizer hash
  std::string out;              // output directory (metrics, checkpoints, summary)
  std::string run_id;           // default: the output directory's name
  std::string run_group;        // replicates of one configuration (other seeds) share it; "": none
  // model
  ModelConfig model;            // vocab_size 0 = take it from the manifest
  // optimization (Table 5)
  double lr = 3e-4, min_lr = 3e-5;
  double min_lr_ratio = 0;      // > 0: min_lr = min_lr_ratio * lr (a learning-rate sweep keeps its shape)
  int64_t warmup_steps = 2000;
  double warmup_fraction = -1;  // >= 0 overrides warmup_steps: fraction of the run
  // warmup_steps is at most this fraction of the run (0: no cap), so a short run with the
  // default 2000 steps still warms up and decays; an explicit --warmup-steps sets it to 0
  double warmup_cap = 0.1;
  double weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, grad_clip = 1.0;
  int64_t batch_tokens = 262144;  // global batch (256 x 1024), reached by accumulation
  int64_t micro_batch = 8;        // sequences per forward/backward (per rank)
  int64_t steps = 0;              // run length in optimizer steps, or:
  int64_t tokens = 0;             // run length in tokens (rounded up to whole steps), or:
  // tokens = tokens_per_param x the model's parameters (Chinchilla's budget, ~20): the
  // count is "total" (Hoffmann et al.'s N: every parameter, embedding included; the
  // default, so that at micro scale, where the embedding is most of a shallow model, the
  // shallow runs are not a few dozen steps), "non-embedding" (Kaplan's N) or "12DW2"
  double tokens_per_param = 0;
  std::string tokens_per_param_count = "total";
  uint64_t seed = 42;
  // evaluation, logging, checkpoints
  int64_t val_every = 0;          // steps between validation passes (0: only at the end)
  int64_t val_tokens = 1 << 20;   // size of the fixed validation set
  int64_t log_every = 10;         // progress line on stderr
  int64_t readout_every = 0;      // steps between host reads of loss and grad norm (0: readout_interval's)
  int64_t checkpoint_every = 1000;
  int keep_checkpoints = 3;
  // no checkpoint at all, not even at the end or on a signal, and no weight hash: a
  // throughput or memory measurement at paper scale, where the final checkpoint alone is
  // tens of GB through SHA-256 and fsync (minutes of a short GPU call, and the disk)
  bool no_checkpoints = false;
  double divergence_factor = 2;   // stop when the loss exceeds this x max(first loss, ln vocab) (0: non-finite only)
  bool resume = false;            // require a checkpoint to resume from
  std::vector<int64_t> probe_steps;  // steps (1-based) whose per-layer grad norms go to grad_norms.csv
  std::vector<int64_t> profile_steps;  // first and last step under LibTorch's profiler (profile.csv); empty: off
  // execution
  std::string device = "cpu";     // cpu | cuda
  std::string precision = "auto"; // auto (bf16 on cuda, fp32 on cpu) | fp32 | bf16
  int threads = 0;                // intra-op threads on CPU (0: all cores)
  int prefetch = 4;               // micro-batches buffered by the loader thread
  double peak_flops = 0;          // MFU denominator; 0 = measure a matmul peak at start
  int zero = 0;                   // 1: AdamW moments sharded over the data-parallel ranks (ZeRO-1); 2: gradients too
  double bucket_mb = 25;          // MiB per bucket of the data-parallel collectives
  bool activation_checkpointing = false;  // recompute each block in backward (model/recompute.h)
  std::string kernels = "fixed";  // fixed | native: the CPU kernel set (kernels/kernel_set.h)
  // testing hooks: SIGKILL self at this step, "step" (after the step) or "checkpoint"
  // (inside the checkpoint write, before its rename); "sigterm": SIGTERM self after the step
  int64_t debug_kill_at_step = 0;
  std::string debug_kill_phase = "step";

  int64_t total_steps() const;     // steps, or ceil(run_tokens() / batch_tokens)
  // --tokens, or the budget tokens_per_param x the counted parameters (rounded to a whole
  // token); needs model.vocab_size for the "total" count (the trainer fills it first)
  int64_t run_tokens() const;
  double final_lr() const;         // min_lr, or min_lr_ratio * lr
  int64_t warmup() const;          // resolved warmup steps
  // What the defaults changed for this run, one sentence each ("warmup capped at 10% of
  // a 30-step run: ..."); empty when nothing was capped. The trainer adds the data's caps.
  std::vector<std::string> caps() const;
  double lr_at(int64_t step) const;  // step 0-based: linear warmup, cosine to min_lr
  // Steps between readouts (train/trainer.cpp): --readout-every, or by default every step on
  // the CPU, where reading a value waits for nothing, and --log-every steps (10 without
  // progress lines) on a GPU, which then runs ahead of the host in between.
  int64_t readout_interval(bool on_cpu) const;
  int64_t checkpoint_interval() const { return no_checkpoints ? 0 : checkpoint_every; }  // 0: none periodic
  void validate() const;           // throws Error
};

// The option rows (util/option_table.h). Model rows come from visit_model_options and
// live under "model" in JSON; visit_train_options visits the run's own rows only.
template <class Config, class F>  // Config: TrainConfig or const TrainConfig
void visit_train_options(Config& c, F&& f) {
  // data and outputs: how a run is stored, not what it computes
  f(OptionInfo{"data", "--data", "shard directory (or its manifest.json)"}.runtime().no_default(), c.data);
  f(OptionInfo{"tokenizer_model", "--tokenizer-model", "tokenizer (sentencepiece model or GPT-2 directory): checked against the manifest's hash"}.runtime().no_default(),
    c.tokenizer_model);
  f(OptionInfo{"out", "--out", "output directory (metrics.jsonl, checkpoints/, summary.json)"}.runtime().no_default(), c.out);
  f(OptionInfo{"run_id", "--run-id", "run name (default: the output directory's name)"}.runtime().no_default(), c.run_id);
  f(OptionInfo{"run_group", "--run-group",
               "replicates of one configuration (e.g. other seeds) share a group: fit-law resamples whole groups and "
               "measures the spread between replicates"}.runtime().no_default(),
    c.run_group);
  // optimization
  f(OptionInfo{"lr", "--lr", "peak (base) learning rate"}.sweepable(), c.lr);
  f(OptionInfo{"min_lr", "--min-lr", "final learning rate of the cosine decay"}.sweepable(), c.min_lr);
  f(OptionInfo{"min_lr_ratio", "--min-lr-ratio", "final learning rate as a fraction of --lr (overrides --min-lr; 0: off)"},
    c.min_lr_ratio);
  f(OptionInfo{"warmup_steps", "--warmup-steps", "linear warmup steps"}.sweepable(), c.warmup_steps);
  f(OptionInfo{"warmup_fraction", "--warmup-fraction", "warmup as a fraction of the run (overrides steps)"}.no_default().sweepable(),
    c.warmup_fraction);
  f(OptionInfo{"warmup_cap", "--warmup-cap",
               "--warmup-steps is at most this fraction of the run (0: no cap; given --warmup-steps, no cap unless "
               "this is given too)"},
    c.warmup_cap);
  f(OptionInfo{"weight_decay", "--weight-decay", "AdamW decay of matrices (not biases/norms)"}.sweepable(),
    c.weight_decay);
  f(OptionInfo{"beta1", "--beta1", "AdamW beta1"}.sweepable(), c.beta1);
  f(OptionInfo{"beta2", "--beta2", "AdamW beta2"}.sweepable(), c.beta2);
  f(OptionInfo{"eps", "--eps", "AdamW epsilon"}.sweepable(), c.eps);
  f(OptionInfo{"grad_clip", "--grad-clip", "global gradient-norm clip (0: off)"}.sweepable(), c.grad_clip);
  f(OptionInfo{"batch_tokens", "--batch-tokens", "global batch in tokens (via accumulation)"}.sweepable(),
    c.batch_tokens);
  f(OptionInfo{"micro_batch", "--micro-batch", "sequences per forward/backward per rank"}, c.micro_batch);
  f(OptionInfo{"steps", "--steps", "run length in optimizer steps"}.no_default(), c.steps);
  f(OptionInfo{"tokens", "--tokens", "run length in tokens (rounded up to whole steps)"}.no_default(), c.tokens);
  f(OptionInfo{"tokens_per_param", "--tokens-per-param",
               "run length = this x the model's parameters (Chinchilla: 20), counted by --tokens-per-param-count "
               "(instead of --tokens/--steps; 0: off)"}.no_default().sweepable(),
    c.tokens_per_param);
  f(OptionInfo{"tokens_per_param_count", "--tokens-per-param-count",
               "the parameters --tokens-per-param counts: total (Hoffmann et al.'s N, embedding included) | "
               "non-embedding (Kaplan's N) | 12DW2 (the paper's N)"}.sweepable(),
    c.tokens_per_param_count);
  f(OptionInfo{"seed", "--seed", "seed of initialization and data order"}, c.seed);
  // evaluation, logging, checkpoints
  f(OptionInfo{"val_every", "--val-every", "steps between validation passes (0: end only)"}.runtime(), c.val_every);
  f(OptionInfo{"val_tokens", "--val-tokens", "size of the fixed validation set"}, c.val_tokens);
  f(OptionInfo{"log_every", "--log-every", "steps between progress lines on stderr"}.runtime(), c.log_every);
  f(OptionInfo{"readout_every", "--readout-every",
               "steps between reads of the loss and gradient norm back to the host, where divergence is checked "
               "and metrics written (0: every step on cpu, --log-every on cuda; the values are the same either way)"}
        .runtime(),
    c.readout_every);
  f(OptionInfo{"checkpoint_every", "--checkpoint-every", "steps between checkpoints (0: end only)"}.runtime(),
    c.checkpoint_every);
  f(OptionInfo{"keep_checkpoints", "--keep-checkpoints", "complete checkpoints kept"}.runtime(), c.keep_checkpoints);
  f(OptionInfo{"no_checkpoints", "--no-checkpoints",
               "write no checkpoint (not even at the end or on a signal) and no params_sha256: for throughput and "
               "memory measurements; the run cannot be resumed"}.runtime(),
    c.no_checkpoints);
  f(OptionInfo{"divergence_factor", "--divergence-factor",
               "stop as diverged when the train loss exceeds this x max(first loss, ln vocab), keeping only "
               "checkpoints whose next step was below it (0: stop on non-finite values only)"}.runtime(),
    c.divergence_factor);
  f(OptionInfo{"resume", "--resume", "require a checkpoint to continue from (rerunning resumes anyway)"}.runtime().no_default(),
    c.resume);
  f(OptionInfo{"probe_steps", "--probe-steps", "steps whose per-layer gradient norms go to grad_norms.csv"}.runtime().no_default(),
    c.probe_steps);
  f(OptionInfo{"profile_steps", "--profile-steps",
               "FIRST,LAST: the steps (1-based) run under LibTorch's profiler; each operator's and, on a GPU, each "
               "kernel's calls and time go to profile.csv (one step: FIRST alone)"}.runtime().no_default(),
    c.profile_steps);
  // execution
  f(OptionInfo{"device", "--device", "cpu | cuda"}.runtime(), c.device);
  f(OptionInfo{"precision", "--precision", "auto (bf16 autocast on cuda) | fp32 | bf16"}, c.precision);
  f(OptionInfo{"threads", "--threads", "CPU intra-op threads (0: all cores)"}.runtime(), c.threads);
  f(OptionInfo{"prefetch", "--prefetch", "micro-batches read ahead by the loader thread"}.runtime(), c.prefetch);
  f(OptionInfo{"peak_flops", "--peak-flops", "MFU denominator (0: measure a matmul peak at start)"}.runtime().no_default(),
    c.peak_flops);
  // memory: the same math (bit for bit on CPU); ZeRO changes the checkpoint's optimizer files
  f(OptionInfo{"zero", "--zero",
               "0: plain data parallel; 1: each rank keeps the AdamW moments of 1/world of the parameters (ZeRO-1); "
               "2: and the gradients of that 1/world, sent bucket by bucket during backward (ZeRO-2)"},
    c.zero);
  f(OptionInfo{"bucket_mb", "--bucket-mb",
               "MiB per bucket of the data-parallel collectives (ZeRO-2: the gradient staged per bucket)"}.runtime(),
    c.bucket_mb);
  f(OptionInfo{"activation_checkpointing", "--activation-checkpointing",
               "keep only each block's input, recompute the block in backward (less memory, ~1/3 more compute)"}.runtime().no_default(),
    c.activation_checkpointing);
  f(OptionInfo{"kernels", "--kernels",
               "CPU kernels: fixed (the same bits on every x86-64 CPU with AVX2+FMA: AVX2 kernels, OpenBLAS Haswell, "
               "ATen avx2) | native (the fastest this CPU has, e.g. AVX-512)"},
    c.kernels);
}

nlohmann::json to_json(const TrainConfig& c);
TrainConfig train_config_from_json(const nlohmann::json& j);  // missing keys keep defaults
// The part of the config that fixes the math of a run: a checkpoint whose binding
// config differs from the current one is refused.
nlohmann::json binding_config(const TrainConfig& c);
// The defaults a command line (and a --config file) starts from: TrainConfig's, but the
// vocabulary 0, taken from the shard set's manifest unless given.
TrainConfig command_line_defaults();
// Every row of both tables (model, then the run's own), as `train --options-json` prints it,
// with command_line_defaults()'s values:
// [{"key", "group": "model"|"train", "flag", "help", "binding", "sweepable", "default"}].
nlohmann::json options_table_json();
// A warmup given in steps is the user's: it is capped only when the cap is given too (the
// one place this rule lives; the CLI and the JSON reader both call it).
void uncap_explicit_warmup(TrainConfig& c, bool steps_given, bool cap_given);

// Runs (or resumes) the training described by config; returns the process exit code.
// Throws Error for every user-facing failure.
int run_training(const TrainConfig& config);

}  // namespace shapelaw
