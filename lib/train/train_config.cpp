#include "train/train_config.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "model/equal_params.h"
#include "util/error.h"

namespace shapelaw {

int64_t TrainConfig::total_steps() const {
  if (steps > 0) return steps;
  const int64_t t = run_tokens();
  if (t > 0) return (t + batch_tokens - 1) / batch_tokens;
  return 0;
}

int64_t TrainConfig::run_tokens() const {
  if (tokens_per_param <= 0) return tokens;
  if (model.vocab_size <= 0 && tokens_per_param_count == "total")
    throw Error("train config: --tokens-per-param with the total count needs the vocabulary size (from the data "
                "or --vocab-size)");
  return int64_t(std::llround(tokens_per_param * double(parameter_count(count_parameters(model), tokens_per_param_count))));
}

int64_t TrainConfig::warmup() const {
  if (warmup_fraction >= 0) return int64_t(std::llround(warmup_fraction * double(total_steps())));
  if (warmup_cap > 0)
    return std::min(warmup_steps, std::max<int64_t>(1, std::llround(warmup_cap * double(total_steps()))));
  return warmup_steps;
}

std::vector<std::string> TrainConfig::caps() const {
  std::vector<std::string> out;
  if (warmup_fraction < 0 && warmup() < warmup_steps) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "warmup capped at %g%% of a %lld-step run: %lld steps instead of %lld (--warmup-steps N or "
                  "--warmup-fraction F chooses it)",
                  100 * warmup_cap, (long long)total_steps(), (long long)warmup(), (long long)warmup_steps);
    out.push_back(text);
  }
  return out;
}

int64_t TrainConfig::readout_interval(bool on_cpu) const {
  if (readout_every > 0) return readout_every;
  if (on_cpu) return 1;
  return log_every > 0 ? log_every : 10;
}

double TrainConfig::lr_at(int64_t step) const {
  const int64_t warm = warmup(), total = total_steps();
  if (step < warm) return lr * double(step + 1) / double(warm);
  if (total <= warm) return lr;
  double progress = std::min(1.0, double(step - warm) / double(std::max<int64_t>(1, total - warm - 1)));
  const double lo = final_lr();
  return lo + 0.5 * (lr - lo) * (1.0 + std::cos(M_PI * progress));
}

double TrainConfig::final_lr() const { return min_lr_ratio > 0 ? min_lr_ratio * lr : min_lr;
}

void TrainConfig::validate() const {
  auto fail = [](const std::string& m) { throw Error("train config: " + m); };
  if (data.empty()) fail("--data is required (a shard directory or its manifest.json)");
  if (out.empty()) fail("--out is required");
  if (tokens_per_param < 0) fail("--tokens-per-param must be >= 0");
  if (tokens_per_param > 0 && (steps > 0 || tokens > 0))
    fail("--tokens-per-param sets the run length: give it, --steps or --tokens, not two of them");
  if (steps > 0 && tokens > 0)
    fail("--steps and --tokens both set the run length (" + std::to_string(steps) + " steps, " +
         std::to_string(tokens) + " tokens): give one of them");
  if (tokens_per_param_count != "total" && tokens_per_param_count != "non-embedding" && tokens_per_param_count != "12DW2")
    fail("--tokens-per-param-count must be total, non-embedding or 12DW2 (got '" + tokens_per_param_count + "')");
  // (the budget's length is known once the data gave the vocabulary: the trainer checks it then)
  if (tokens_per_param == 0 && total_steps() <= 0) fail("give the run length with --steps, --tokens or --tokens-per-param");
  if (batch_tokens <= 0 || micro_batch <= 0) fail("--batch-tokens and --micro-batch must be positive");
  if (batch_tokens % (int64_t(model.seq_len) * micro_batch) != 0)
    fail("--batch-tokens " + std::to_string(batch_tokens) + " is not a multiple of seq_len x micro_batch = " +
         std::to_string(int64_t(model.seq_len) * micro_batch));
  // Every comparison is written so that NaN fails it (NaN > 0 is false).
  auto num = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  if (!(lr > 0) || !std::isfinite(lr)) fail("--lr must be a finite number > 0 (got " + num(lr) + ")");
  if (!(min_lr_ratio >= 0 && min_lr_ratio <= 1)) fail("--min-lr-ratio must be in [0, 1] (got " + num(min_lr_ratio) + ")");
  if (min_lr_ratio == 0 && !(min_lr >= 0 && min_lr <= lr))
    fail("--min-lr must be in [0, --lr] (got " + num(min_lr) + ", --lr " + num(lr) + ")");
  if (warmup_steps < 0 || !(warmup_fraction <= 1)) fail("warmup must be >= 0 steps or a fraction <= 1");
  if (!(warmup_cap >= 0 && warmup_cap <= 1)) fail("--warmup-cap must be in [0, 1]");
  if (!(beta1 >= 0 && beta1 < 1)) fail("--beta1 must be in [0, 1) (got " + num(beta1) + ")");
  if (!(beta2 >= 0 && beta2 < 1)) fail("--beta2 must be in [0, 1) (got " + num(beta2) + ")");
  if (!(eps > 0) || !std::isfinite(eps)) fail("--eps must be a finite number > 0 (got " + num(eps) + ")");
  if (!(weight_decay >= 0) || !std::isfinite(weight_decay)) fail("--weight-decay must be >= 0 (got " + num(weight_decay) + ")");
  if (!(grad_clip >= 0) || !std::isfinite(grad_clip)) fail("--grad-clip must be >= 0 (got " + num(grad_clip) + ")");
  if (!(divergence_factor >= 0) || !std::isfinite(divergence_factor))
    fail("--divergence-factor must be >= 0 (got " + num(divergence_factor) + ")");
  if (!(peak_flops >= 0)) fail("--peak-flops must be >= 0 (got " + num(peak_flops) + ")");
  if (checkpoint_every < 0) fail("--checkpoint-every must be >= 0 (0: at the end only; got " + std::to_string(checkpoint_every) + ")");
  if (no_checkpoints && resume) fail("--resume and --no-checkpoints: a run that writes no checkpoint has none to require");
  if (keep_checkpoints < 1) fail("--keep-checkpoints must be >= 1 (got " + std::to_string(keep_checkpoints) + ")");
  if (val_every < 0) fail("--val-every must be >= 0 (0: at the end only; got " + std::to_string(val_every) + ")");
  if (log_every < 0) fail("--log-every must be >= 0 (0: no progress lines; got " + std::to_string(log_every) + ")");
  if (readout_every < 0)
    fail("--readout-every must be >= 0 (0: the device's default; got " + std::to_string(readout_every) + ")");
  if (profile_steps.size() > 2 || (!profile_steps.empty() && profile_steps.front() < 1) ||
      (profile_steps.size() == 2 && profile_steps[1] < profile_steps[0]))
    fail("--profile-steps must be FIRST or FIRST,LAST with 1 <= FIRST <= LAST (got " +
         std::to_string(profile_steps.size()) + " values" +
         (profile_steps.empty() ? std::string() : ", first " + std::to_string(profile_steps.front())) + ")");
  if (val_tokens < 0) fail("--val-tokens must be >= 0 (got " + std::to_string(val_tokens) + ")");
  if (threads < 0) fail("--threads must be >= 0 (0: all cores; got " + std::to_string(threads) + ")");
  if (prefetch < 0) fail("--prefetch must be >= 0 (got " + std::to_string(prefetch) + ")");
  if (steps < 0 || tokens < 0) fail("--steps and --tokens must be >= 0");
  if (device != "cpu" && device != "cuda") fail("--device must be cpu or cuda (got '" + device + "')");
  if (precision != "auto" && precision != "fp32" && precision != "bf16")
    fail("--precision must be auto, fp32 or bf16");
  if (zero < 0 || zero > 2) fail("--zero must be 0, 1 or 2 (got " + std::to_string(zero) + ")");
  if (!(bucket_mb > 0)) fail("--bucket-mb must be > 0 (got " + std::to_string(bucket_mb) + ")");
  if (debug_kill_phase != "step" && debug_kill_phase != "checkpoint" && debug_kill_phase != "sigterm")
    fail("bad debug kill phase");
  if (kernels != "fixed" && kernels != "native") fail("--kernels must be fixed or native (got '" + kernels + "')");
}

namespace {
auto visit_train = [](auto& c, auto&& f) { visit_train_options(c, f); };
}  // namespace

nlohmann::json to_json(const TrainConfig& c) {
  nlohmann::json j = options_to_json(c, visit_train, [](const OptionInfo&) { return true; });
  j["model"] = to_json(c.model);
  return j;
}

TrainConfig train_config_from_json(const nlohmann::json& j) {
  TrainConfig c;
  options_from_json(c, visit_train, j, "train config", {"model"});
  // A warmup written down without a cap (configs before the cap existed, or by hand) is
  // meant as given.
  uncap_explicit_warmup(c, j.contains("warmup_steps"), j.contains("warmup_cap"));
  if (j.contains("model")) c.model = model_config_from_json(j["model"]);
  return c;
}

void uncap_explicit_warmup(TrainConfig& c, bool steps_given, bool cap_given) {
  if (steps_given && !cap_given) c.warmup_cap = 0;
}

TrainConfig command_line_defaults() {
  TrainConfig c;
  c.model.vocab_size = 0;
  return c;
}

nlohmann::json options_table_json() {
  nlohmann::json rows = nlohmann::json::array();
  const TrainConfig c = command_line_defaults();
  auto row = [&rows](const char* group) {
    return [&rows, group](const OptionInfo& o, const auto& member) {
      rows.push_back({{"key", o.key}, {"group", group}, {"flag", o.flag}, {"help", o.help}, {"binding", o.binding},
                      {"sweepable", o.sweep}, {"default", member}});
    };
  };
  visit_model_options(c.model, row("model"));
  visit_train_options(c, row("train"));
  return rows;
}

nlohmann::json binding_config(const TrainConfig& c) {
  nlohmann::json j = options_to_json(c, visit_train, [](const OptionInfo& o) { return o.binding; });
  j["model"] = to_json(c.model);  // every model option is binding
  return j;
}

}  // namespace shapelaw
