#include "train/train_config.h"

#include <cmath>

#include "util/error.h"

namespace shapelaw {

int64_t TrainConfig::total_steps() const {
  if (steps > 0) return steps;
  if (tokens > 0) return (tokens + batch_tokens - 1) / batch_tokens;
  return 0;
}

int64_t TrainConfig::warmup() const {
  if (warmup_fraction >= 0) return int64_t(std::llround(warmup_fraction * double(total_steps())));
  return warmup_steps;
}

double TrainConfig::lr_at(int64_t step) const {
  const int64_t warm = warmup(), total = total_steps();
  if (step < warm) return lr * double(step + 1) / double(warm);
  if (total <= warm) return lr;
  double progress = std::min(1.0, double(step - warm) / double(std::max<int64_t>(1, total - warm - 1)));
  return min_lr + 0.5 * (lr - min_lr) * (1.0 + std::cos(M_PI * progress));
}

void TrainConfig::validate() const {
  auto fail = [](const std::string& m) { throw Error("train config: " + m); };
  if (data.empty()) fail("--data is required (a shard directory or its manifest.json)");
  if (out.empty()) fail("--out is required");
  if (total_steps() <= 0) fail("give the run length with --steps or --tokens");
  if (batch_tokens <= 0 || micro_batch <= 0) fail("--batch-tokens and --micro-batch must be positive");
  if (batch_tokens % (int64_t(model.seq_len) * micro_batch) != 0)
    fail("--batch-tokens " + std::to_string(batch_tokens) + " is not a multiple of seq_len x micro_batch = " +
         std::to_string(int64_t(model.seq_len) * micro_batch));
  if (lr <= 0 || min_lr < 0 || min_lr > lr) fail("need 0 <= --min-lr <= --lr, --lr > 0");
  if (warmup_steps < 0 || warmup_fraction > 1) fail("warmup must be >= 0 steps or a fraction <= 1");
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1 || eps <= 0) fail("bad Adam betas/eps");
  if (weight_decay < 0 || grad_clip < 0) fail("--weight-decay and --grad-clip must be >= 0");
  if (checkpoint_every < 0 || keep_checkpoints < 1) fail("--checkpoint-every >= 0, --keep-checkpoints >= 1");
  if (device != "cpu" && device != "cuda") fail("--device must be cpu or cuda (got '" + device + "')");
  if (precision != "auto" && precision != "fp32" && precision != "bf16")
    fail("--precision must be auto, fp32 or bf16");
  if (debug_kill_phase != "step" && debug_kill_phase != "checkpoint") fail("bad debug kill phase");
}

nlohmann::json to_json(const TrainConfig& c) {
  return {{"data", c.data}, {"tokenizer_model", c.tokenizer_model}, {"out", c.out}, {"run_id", c.run_id},
          {"run_group", c.run_group},
          {"model", to_json(c.model)},
          {"lr", c.lr}, {"min_lr", c.min_lr}, {"warmup_steps", c.warmup_steps},
          {"warmup_fraction", c.warmup_fraction}, {"weight_decay", c.weight_decay},
          {"beta1", c.beta1}, {"beta2", c.beta2}, {"eps", c.eps}, {"grad_clip", c.grad_clip},
          {"batch_tokens", c.batch_tokens}, {"micro_batch", c.micro_batch}, {"steps", c.steps},
          {"tokens", c.tokens}, {"seed", c.seed}, {"val_every", c.val_every},
          {"val_tokens", c.val_tokens}, {"log_every", c.log_every},
          {"checkpoint_every", c.checkpoint_every}, {"keep_checkpoints", c.keep_checkpoints},
          {"resume", c.resume}, {"probe_steps", c.probe_steps}, {"device", c.device},
          {"precision", c.precision}, {"threads", c.threads}, {"prefetch", c.prefetch},
          {"peak_flops", c.peak_flops}};
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
  TrainConfig c;
  if (!j.is_object()) throw Error("train config: expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    static const char* known[] = {"data", "tokenizer_model", "out", "run_id", "run_group", "model", "lr", "min_lr",
        "warmup_steps", "warmup_fraction", "weight_decay", "beta1", "beta2", "eps", "grad_clip",
        "batch_tokens", "micro_batch", "steps", "tokens", "seed", "val_every", "val_tokens",
        "log_every", "checkpoint_every", "keep_checkpoints", "resume", "probe_steps", "device",
        "precision", "threads", "prefetch", "peak_flops"};
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) throw Error("train config: unknown key '" + it.key() + "'");
  }
  try {
    c.data = j.value("data", c.data);
    c.tokenizer_model = j.value("tokenizer_model", c.tokenizer_model);
    c.out = j.value("out", c.out);
    c.run_id = j.value("run_id", c.run_id);
    c.run_group = j.value("run_group", c.run_group);
    if (j.contains("model")) c.model = model_config_from_json(j["model"]);
    c.lr = j.value("lr", c.lr);
    c.min_lr = j.value("min_lr", c.min_lr);
    c.warmup_steps = j.value("warmup_steps", c.warmup_steps);
    c.warmup_fraction = j.value("warmup_fraction", c.warmup_fraction);
    c.weight_decay = j.value("weight_decay", c.weight_decay);
    c.beta1 = j.value("beta1", c.beta1);
    c.beta2 = j.value("beta2", c.beta2);
    c.eps = j.value("eps", c.eps);
    c.grad_clip = j.value("grad_clip", c.grad_clip);
    c.batch_tokens = j.value("batch_tokens", c.batch_tokens);
    c.micro_batch = j.value("micro_batch", c.micro_batch);
    c.steps = j.value("steps", c.steps);
    c.tokens = j.value("tokens", c.tokens);
    c.seed = j.value("seed", c.seed);
    c.val_every = j.value("val_every", c.val_every);
    c.val_tokens = j.value("val_tokens", c.val_tokens);
    c.log_every = j.value("log_every", c.log_every);
    c.checkpoint_every = j.value("checkpoint_every", c.checkpoint_every);
    c.keep_checkpoints = j.value("keep_checkpoints", c.keep_checkpoints);
    c.resume = j.value("resume", c.resume);
    c.probe_steps = j.value("probe_steps", c.probe_steps);
    c.device = j.value("device", c.device);
    c.precision = j.value("precision", c.precision);
    c.threads = j.value("threads", c.threads);
    c.prefetch = j.value("prefetch", c.prefetch);
    c.peak_flops = j.value("peak_flops", c.peak_flops);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("train config: ") + e.what());
  }
  return c;
}

nlohmann::json binding_config(const TrainConfig& c) {
  nlohmann::json j = to_json(c);
  // options that change how a run is executed or reported, not what it computes
  for (const char* k : {"data", "tokenizer_model", "out", "run_id", "run_group", "val_every", "log_every",
                        "checkpoint_every", "keep_checkpoints", "resume", "probe_steps", "device",
                        "threads", "prefetch", "peak_flops"})
    j.erase(k);
  return j;
}

}  // namespace shapelaw
