// train: trains one depth x width transformer on a shard directory (see docs/formats.md,
// "train outputs"). Every hyperparameter is a flag; --config FILE.json gives defaults
// (keys as in summary.json's "config"), flags given on the command line override it.
#include <CLI/CLI.hpp>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "train/distributed.h"
#include "train/synthetic_data.h"
#include "train/torch_compat.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/cpu_runtime.h"
#include "util/error.h"
#include "util/tool_main.h"

namespace {

const char* kFooter = R"(FLOPs per token (summary.json "flops_per_token"), PaLM-style:
  6 * (N_non_embedding + V*W) + 12 * D * W * seq_len
i.e. every weight matmul incl. the output head, forward + backward, plus attention
scores and A.V without a causal discount; compute_flops = 6 * N_non_embedding * T.
Re-running the same command on the same --out continues from the newest complete
checkpoint; a changed configuration is refused.
Data parallel: launch with torchrun --no-python --nproc-per-node N train ... (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; loopback:29500 by default) or under
srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; set MASTER_ADDR for several nodes).)";

void add_options(CLI::App& app, shapelaw::TrainConfig& c) {
  auto& m = c.model;
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // last flag wins
  app.add_option("--data", c.data, "shard directory (or its manifest.json)");
  app.add_option("--tokenizer-model", c.tokenizer_model, "sentencepiece model: checked against the manifest's hash");
  app.add_option("--out", c.out, "output directory (metrics.jsonl, checkpoints/, summary.json)");
  app.add_option("--run-id", c.run_id, "run name (default: the output directory's name)");
  app.add_option("--run-group", c.run_group,
                 "replicates of one configuration (e.g. other seeds) share a group: fit-law resamples "
                 "whole groups and measures the spread between replicates");
  // model
  app.add_option("--depth", m.depth, "D: transformer blocks")->capture_default_str();
  app.add_option("--width", m.width, "W: model width")->capture_default_str();
  app.add_option("--head-dim", m.head_dim, "head dimension (heads = W / head_dim)")->capture_default_str();
  app.add_option("--vocab-size", m.vocab_size, "vocabulary (0: from the manifest)")->capture_default_str();
  app.add_option("--seq-len", m.seq_len, "sequence length")->capture_default_str();
  app.add_option("--mlp", m.mlp, "gelu (4W) | swiglu (8W/3 rounded up to 64)")->capture_default_str();
  app.add_option("--norm", m.norm, "layernorm | rmsnorm (pre-norm)")->capture_default_str();
  app.add_flag("--tie-embeddings,!--untie-embeddings", m.tie_embeddings, "share input and output embeddings");
  app.add_flag("--bias,!--no-bias", m.bias, "biases in the Linear layers");
  app.add_option("--rope-theta", m.rope_theta, "RoPE base")->capture_default_str();
  app.add_option("--init-std", m.init_std, "init std (residual projections / sqrt(2D))")->capture_default_str();
  // optimization
  app.add_option("--lr", c.lr, "peak learning rate")->capture_default_str();
  app.add_option("--min-lr", c.min_lr, "final learning rate of the cosine decay")->capture_default_str();
  app.add_option("--warmup-steps", c.warmup_steps, "linear warmup steps")->capture_default_str();
  app.add_option("--warmup-fraction", c.warmup_fraction, "warmup as a fraction of the run (overrides steps)");
  app.add_option("--weight-decay", c.weight_decay, "AdamW decay of matrices (not biases/norms)")->capture_default_str();
  app.add_option("--beta1", c.beta1, "AdamW beta1")->capture_default_str();
  app.add_option("--beta2", c.beta2, "AdamW beta2")->capture_default_str();
  app.add_option("--eps", c.eps, "AdamW epsilon")->capture_default_str();
  app.add_option("--grad-clip", c.grad_clip, "global gradient-norm clip (0: off)")->capture_default_str();
  app.add_option("--batch-tokens", c.batch_tokens, "global batch in tokens (via accumulation)")->capture_default_str();
  app.add_option("--micro-batch", c.micro_batch, "sequences per forward/backward per rank")->capture_default_str();
  app.add_option("--steps", c.steps, "run length in optimizer steps");
  app.add_option("--tokens", c.tokens, "run length in tokens (rounded up to whole steps)");
  app.add_option("--seed", c.seed, "seed of initialization and data order")->capture_default_str();
  // evaluation, logging, checkpoints
  app.add_option("--val-every", c.val_every, "steps between validation passes (0: end only)")->capture_default_str();
  app.add_option("--val-tokens", c.val_tokens, "size of the fixed validation set")->capture_default_str();
  app.add_option("--log-every", c.log_every, "steps between progress lines on stderr")->capture_default_str();
  app.add_option("--checkpoint-every", c.checkpoint_every, "steps between checkpoints (0: end only)")->capture_default_str();
  app.add_option("--keep-checkpoints", c.keep_checkpoints, "complete checkpoints kept")->capture_default_str();
  app.add_flag("--resume", c.resume, "require a checkpoint to continue from (rerunning resumes anyway)");
  app.add_option("--probe-steps", c.probe_steps, "steps whose per-layer gradient norms go to grad_norms.csv")
      ->delimiter(',')
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  // execution
  app.add_option("--device", c.device, "cpu | cuda")->capture_default_str();
  app.add_option("--precision", c.precision, "auto (bf16 autocast on cuda) | fp32 | bf16")->capture_default_str();
  app.add_option("--threads", c.threads, "CPU intra-op threads (0: all cores)")->capture_default_str();
  app.add_option("--prefetch", c.prefetch, "micro-batches read ahead by the loader thread")->capture_default_str();
  app.add_option("--peak-flops", c.peak_flops, "MFU denominator (0: measure a matmul peak at start)");
  app.add_option("--debug-kill-at-step", c.debug_kill_at_step, "testing: SIGKILL self at this step")->group("");
  app.add_option("--debug-kill-phase", c.debug_kill_phase, "testing: step | checkpoint")->group("");
}

}  // namespace

int main(int argc, char** argv) {
  shapelaw::tune_cpu_runtime("train", argv);
  return shapelaw::tool_main("train", [&]() -> int {
    shapelaw::TrainConfig config;
    config.model.vocab_size = 0;  // from the manifest unless given
    // pass 1: only --config, so the file's values become the defaults of pass 2
    {
      CLI::App pre;
      pre.allow_extras();
      pre.set_help_flag();
      std::string config_path;
      pre.add_option("--config", config_path);
      try {
        pre.parse(argc, argv);
      } catch (const CLI::ParseError&) {
      }
      if (!config_path.empty()) {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(shapelaw::read_file(config_path));
        } catch (const nlohmann::json::exception& e) {
          throw shapelaw::Error(config_path + ": invalid JSON: " + e.what());
        }
        config = shapelaw::train_config_from_json(j);
        if (!j.contains("model") || !j["model"].contains("vocab_size")) config.model.vocab_size = 0;
      }
    }
    CLI::App app{"Train one depth x width decoder-only transformer on token shards (LibTorch)."};
    app.set_version_flag("--version", shapelaw::tool_version("train") + "\nLibTorch " + shapelaw::compat::torch_version() +
                                           "\nBLAS: " + shapelaw::blas_description() +
                                           "\ndata parallel: " + (shapelaw::Distributed::available()
                                                                        ? shapelaw::Distributed::backends()
                                                                        : std::string("none (single process only)")));
    app.footer(kFooter);
    std::string config_path;
    app.add_option("--config", config_path, "JSON file of options (keys as summary.json's \"config\")");
    add_options(app, config);
    std::string synthetic_dir;
    uint64_t synthetic_tokens = 4'000'000;
    app.add_option("--make-synthetic-shards", synthetic_dir,
                   "write a shard set of random tokens (vocab --vocab-size, default 50257) to DIR and exit");
    app.add_option("--synthetic-tokens", synthetic_tokens, "tokens in --make-synthetic-shards")->capture_default_str();
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      return app.exit(e);
    }
    if (!synthetic_dir.empty()) {
      auto vocab = config.model.vocab_size > 0 ? config.model.vocab_size : 50257;
      shapelaw::write_synthetic_shards(synthetic_dir, synthetic_tokens, uint32_t(vocab), config.seed);
      std::fprintf(stderr, "train: wrote %llu synthetic tokens (vocab %lld) to %s\n",
                   (unsigned long long)synthetic_tokens, (long long)vocab, synthetic_dir.c_str());
      return 0;
    }
    if (config.data.empty() || config.out.empty()) {
      std::fprintf(stderr, "train: error: --data and --out are required\nRun with --help for more information.\n");
      return 2;
    }
    return shapelaw::run_training(config);
  });
}
