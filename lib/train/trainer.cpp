// The training loop, nanoGPT-shaped: set up (data, device, model, optimizer, resume),
// then per step get the lr, accumulate gradients over micro-batches, average them
// across ranks, clip, step, record; validation and checkpoints on their schedules;
// at the end a final validation, checkpoint and summary.json. The components live in
// their own files: prefetch.h (data), optimizer.h (parameter groups, AdamW),
// checkpointer.h (save/resume), evaluate.h (estimate_loss), metrics.h (records),
// readouts.h (losses and gradient norms read back, divergence), step_profile.h
// (profile.csv), stop_signals.h (SIGTERM/SIGINT/SIGUSR1), memory_meter.h and run_plan.h
// (memory measured and planned), run_directory.h (--out's checks and lock),
// kernel_record.h, cpu_threads.h, device.h, distributed.h.
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>
#include <unordered_map>

#include "compat/torch_compat.h"
#include "kernels/kernel_set.h"
#include "model/equal_params.h"
#include "model/model.h"
#include "model/parameterization.h"
#include "shards/dataset.h"
#include "train/checkpointer.h"
#include "train/cpu_threads.h"
#include "train/device.h"
#include "train/divergence.h"
#include "train/distributed.h"
#include "train/evaluate.h"
#include "train/kernel_record.h"
#include "train/memory_meter.h"
#include "train/metrics.h"
#include "train/optimizer.h"
#include "train/prefetch.h"
#include "train/readouts.h"
#include "train/run_directory.h"
#include "train/run_plan.h"
#include "train/step_profile.h"
#include "train/stop_signals.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/cpu_runtime.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace shapelaw {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

void debug_kill(const char* where, int64_t step) {
  std::fprintf(stderr, "train: debug: SIGKILL self at step %lld (%s)\n", (long long)step, where);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

// One optimizer step's forward/backward over `accum` micro-batches: gradients of the
// mean loss in .grad; returns the sum of the micro-batch losses. Timings go into rec.
// With --zero 2 the gradients leave .grad bucket by bucket during each backward
// (train/zero_gradients.h), on probe steps too.
torch::Tensor accumulate_gradients(Transformer& model, Prefetcher& prefetch, const std::vector<torch::Tensor>& params,
                                   Optimizer& optimizer, const TrainConfig& cfg, int64_t accum,
                                   const RunDevice& rd, WindowSampler::Cursor& cursor, StepRecord& rec) {
  const int64_t window = cfg.model.seq_len + 1;
  for (auto& p : params) p.mutable_grad() = torch::Tensor();  // the first backward writes, not adds
  optimizer.begin_gradients();
  torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(rd.device));
  double forward_s = 0, backward_s = 0;  // host-side phase times (exact on CPU)
  for (int64_t micro = 0; micro < accum; ++micro) {
    MicroBatch mb = prefetch.next(rec.data_wait_ms);
    auto [x, y] = to_batch(mb.tokens, cfg.micro_batch, window, rd.device);
    torch::Tensor loss;
    auto tf = Clock::now();
    {
      compat::AutocastBf16 autocast(rd.bf16);
      loss = model->loss(x, y);
    }
    auto tb = Clock::now();
    forward_s += std::chrono::duration<double>(tb - tf).count();
    (loss / double(accum)).backward();
    optimizer.end_micro_batch();
    backward_s += seconds_since(tb);
    loss_sum += loss.detach().to(torch::kFloat32);
    cursor = mb.after;
  }
  if (rd.device.is_cpu()) rec.forward_ms = 1000.0 * forward_s, rec.backward_ms = 1000.0 * backward_s;
  return loss_sum;
}

// What this rank holds after a step, counted from the tensors themselves.
MeasuredMemory measure_state(const std::vector<torch::Tensor>& params, const Optimizer& optimizer) {
  MeasuredMemory m;
  for (auto& p : params) m.weights += p.numel() * int64_t(p.element_size());
  m.gradients = optimizer.gradient_bytes(params);
  m.optimizer_state = optimizer.state_bytes();
  return m;
}

std::string describe_groups(const Optimizer& opt, const Multipliers& m, const ModelConfig& c) {
  std::string s = "parameterization " + c.param + ": m_w " + fmt("%g", m.m_w) + ", m_d " + fmt("%g", m.m_d) +
                  ", residual x" + fmt("%.4g", m.residual) + ", hidden init x" + fmt("%.4g", m.hidden_init) +
                  ", residual-out init /" + fmt("%.4g", m.resid_out_divisor) + ", logits x" + fmt("%.4g", m.logit) +
                  ", attention scale " + fmt("%.4g", m.attn_scale) + "; AdamW groups:";
  for (auto& g : opt.groups())
    s += "\n  " + g.rules + ": " + std::to_string(g.names.size()) + " tensors, " + std::to_string(g.numel) +
         " params, lr x" + fmt("%.4g", g.lr_mult) + ", weight decay " + fmt("%.4g", g.weight_decay) + ", eps " +
         fmt("%.4g", g.eps);
  return s;
}

// The final weights' bits (each parameter's name and fp32 values, in the model's order):
// two runs with the same hash trained to the same bits (scripts/check-reproduced).
std::string parameters_sha256(Transformer& model) {
  Sha256 hash;
  for (const auto& item : model->named_parameters()) {
    const torch::Tensor t = item.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    hash.update(item.key());
    hash.update(t.data_ptr<float>(), size_t(t.numel()) * sizeof(float));
  }
  return hash.hex_digest();
}

json run_summary(const TrainConfig& cfg, const TrainState& st, const TokenDataset& dataset, const RunDevice& rd,
                 const Distributed& dist, const RunIdentity& id, const Multipliers& m, double val_loss,
                 int64_t val_tokens, double wall, double peak, const json& memory,
                 const std::vector<std::string>& caps, const std::string& attention, double val_loss_fp32) {
  const ParamCounts counts = count_parameters(cfg.model);
  const double fpt = flops_per_token(cfg.model);
  const TailLoss tail = tail_loss(st.losses);
  json summary = {{"format", "shapelaw.summary"},
                  {"version", 1},
                  {"run_id", cfg.run_id},
                  {"depth", cfg.model.depth},
                  {"width", cfg.model.width},
                  {"heads", cfg.model.heads()},
                  {"head_dim", cfg.model.head_dim},
                  {"vocab_size", cfg.model.vocab_size},
                  {"seq_len", cfg.model.seq_len},
                  {"mlp", cfg.model.mlp},
                  {"norm", cfg.model.norm},
                  {"tie_embeddings", cfg.model.tie_embeddings},
                  {"param", cfg.model.param},
                  {"params",
                   {{"total", counts.total}, {"non_embedding", counts.non_embedding},
                    {"embedding", counts.embedding}, {"paper_12DW2", counts.paper_12DW2}}},
                  {"flops_per_token", fpt},
                  {"tokens", st.tokens},
                  {"compute_flops", 6.0 * double(counts.non_embedding) * double(st.tokens)},
                  {"total_flops", fpt * double(st.tokens)},
                  {"final_val_loss", std::isfinite(val_loss) ? json(val_loss) : json()},
                  {"val_precision", rd.bf16 ? "bf16" : "fp32"},
                  {"val_tokens", val_tokens},
                  {"caps", caps},
                  {"final_train_loss", tail.mean},
                  {"final_train_loss_se", std::isfinite(tail.se) ? json(tail.se) : json()},
                  {"final_train_loss_steps", tail.steps},
                  {"steps", st.step},
                  {"train_epochs", double(st.tokens) / double(std::max<uint64_t>(1, dataset.split("train").num_tokens()))},
                  {"wall_seconds", wall},
                  {"peak_flops", peak},
                  {"device", rd.device.str()},
                  {"precision", rd.bf16 ? "bf16" : "fp32"},
                  {"world_size", dist.world},
                  {"torch_version", compat::torch_version()},
                  {"blas", blas_description()},
                  {"kernels", to_json(current_kernel_record())},
                  {"git_rev", shapelaw_git_rev()},
                  {"data_manifest_sha256", dataset.manifest_sha256()},
                  {"tokenizer_sha256", dataset.tokenizer_sha256()},
                  {"tokenizer_kind", dataset.tokenizer().kind},
                  {"parameterization", to_json(m)},
                  {"param_groups", id.param_groups},
                  {"binding_config", id.binding_config},
                  {"memory", memory},
                  {"attention_backend", attention},
                  {"config", to_json(cfg)}};
  // `train eval` evaluates in fp32: a bf16 run records that loss too, to compare with
  if (rd.bf16) summary["final_val_loss_fp32"] = std::isfinite(val_loss_fp32) ? json(val_loss_fp32) : json();
  if (!cfg.run_group.empty()) summary["group"] = cfg.run_group;  // fit-law: replicates of one configuration
  return summary;
}

// ---------------------------------------------------------------- the run
int run_impl(const TrainConfig& given) {
  const auto wall_start = Clock::now();
  TrainConfig cfg = given;
  cfg.validate();
  choose_kernel_set(parse_kernel_set(cfg.kernels));  // before any kernel runs
  Distributed dist = Distributed::from_env(cfg.device);
  dist.bucket_bytes = int64_t(cfg.bucket_mb * double(1 << 20));
  const bool leader = dist.rank == 0;
  auto log = [&](const std::string& msg) {
    if (leader) std::fprintf(stderr, "train: %s\n", msg.c_str());
  };

  // data, recorded as an absolute path (a relative one means nothing from another directory)
  cfg.data = fs::absolute(cfg.data).lexically_normal().string();
  TokenDataset dataset = TokenDataset::open(cfg.data);
  if (!cfg.tokenizer_model.empty()) dataset.check_tokenizer(cfg.tokenizer_model);
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = dataset.vocab_size();
  if (cfg.model.vocab_size < int64_t(dataset.vocab_size()))
    throw Error("--vocab-size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's vocabulary (" +
                std::to_string(dataset.vocab_size()) + ")");
  cfg.model.validate();
  if (cfg.tokens_per_param > 0) {  // the budget's length needs the vocabulary, known only now
    if (cfg.total_steps() <= 0)
      throw Error("--tokens-per-param " + fmt("%g", cfg.tokens_per_param) + " gives a run of no step");
    log("budget: " + fmt("%g", cfg.tokens_per_param) + " tokens per parameter x " +
        std::to_string(parameter_count(count_parameters(cfg.model), cfg.tokens_per_param_count)) + " (" +
        cfg.tokens_per_param_count + ") = " + std::to_string(cfg.run_tokens()) + " tokens");
  }
  if (cfg.run_id.empty()) {
    fs::path p = fs::path(cfg.out).lexically_normal();
    cfg.run_id = (p.filename().empty() ? p.parent_path().filename() : p.filename()).string();
  }
  const int64_t seq = cfg.model.seq_len, window = seq + 1;
  const int64_t per_step_seqs = cfg.batch_tokens / seq;
  if (per_step_seqs % (cfg.micro_batch * dist.world) != 0)
    throw Error("--batch-tokens " + std::to_string(cfg.batch_tokens) + " = " + std::to_string(per_step_seqs) +
                " sequences is not divisible by micro_batch x world = " + std::to_string(cfg.micro_batch * dist.world));
  const int64_t accum = per_step_seqs / (cfg.micro_batch * dist.world);
  const int64_t total_steps = cfg.total_steps();
  WindowSampler sampler(dataset.split("train"), size_t(window), cfg.seed, dist.rank, dist.world);

  // device, threads, outputs, the fixed validation set
  const RunDevice rd = select_device(cfg.device, cfg.precision, dist);
  // one run: the same math and the same data, by content (the manifest's splits: shard
  // digests and counts), not by the revision or the input path that made the shards
  dist.check_one_run(binding_config(cfg).dump() + "\n" + dataset.manifest().value("splits", json()).dump(),
                     rd.device);
  const int threads = use_cpu_threads(cfg.threads);
  std::optional<RunDirectoryLock> lock;  // held until the run returns
  if (leader) {
    check_run_directory(cfg.out, dataset.directory(), binding_config(cfg), binding_config(TrainConfig{}));
    make_directories(cfg.out);
    lock.emplace(cfg.out);
    make_directories(cfg.out + "/checkpoints");
    write_file_atomic(cfg.out + "/.write-test", "ok\n");  // fails clearly if unwritable
    fs::remove(cfg.out + "/.write-test");
  }
  const torch::Tensor val_windows = load_eval_windows(dataset, "validation", cfg.val_tokens, window);
  if (!val_windows.defined())
    log("warning: no validation split with a full window of " + std::to_string(window) +
        " tokens: final_val_loss will be null");
  // Every default or request that this run's size or data cut short, said once here and
  // kept in summary.json.
  std::vector<std::string> caps = cfg.caps();
  if (val_windows.defined() && val_windows.size(0) < std::max<int64_t>(1, cfg.val_tokens / window))
    caps.push_back("--val-tokens " + std::to_string(cfg.val_tokens) + " capped to the validation split (" +
                   std::to_string(dataset.split("validation").num_tokens()) + " tokens): " +
                   std::to_string(val_windows.size(0)) + " windows of " + std::to_string(window) + ", " +
                   std::to_string(val_windows.size(0) * seq) + " target tokens");

  // model and optimizer
  const double peak = cfg.peak_flops > 0 ? cfg.peak_flops : measure_matmul_peak(rd.device, rd.bf16);
  if (rd.device.is_cpu()) install_cpu_memory_meter();  // counts from here on
  // The weights are drawn on the CPU whatever the device, so every device trains the same
  // ones; the draws are serial (about 0.2-0.3 G/s): tens of seconds at the paper's 7B rows.
  const ParamCounts counts = count_parameters(cfg.model);
  const auto t_build = std::chrono::steady_clock::now();
  if (counts.allocated >= 500'000'000)
    log("building the model's " + fmt("%.3g", double(counts.allocated)) +
        " parameters on the CPU (the same weights on every device) ...");
  torch::manual_seed(cfg.seed);
  Transformer model(cfg.model);
  model->to(rd.device);
  const double build_s = seconds_since(t_build);
  model->activation_checkpointing = cfg.activation_checkpointing;
  Optimizer optimizer(*model, cfg, dist);
  const std::vector<torch::Tensor> params = model->parameters();
  const std::string attention = compat::attention_backend(
      torch::zeros({cfg.micro_batch, cfg.model.heads(), seq, cfg.model.head_dim},
                   torch::TensorOptions().device(rd.device).dtype(rd.bf16 ? torch::kBFloat16 : torch::kFloat32)));
  const Multipliers mult = parameterization_multipliers(cfg.model);
  const RunIdentity id{binding_config(cfg),  binding_config(TrainConfig{}), optimizer.groups_json(),
                       dataset.manifest_sha256(), dataset.tokenizer_sha256(), dist.world,
                       dataset.tokenizer().kind};

  const double fpt = flops_per_token(cfg.model);
  log("model " + std::to_string(cfg.model.depth) + "L x " + std::to_string(cfg.model.width) + "W (" +
      std::to_string(cfg.model.heads()) + " heads, " + cfg.model.mlp + ", " + cfg.model.norm + "): params total " +
      std::to_string(counts.total) + ", non-embedding " + std::to_string(counts.non_embedding) + ", 12DW^2 " +
      std::to_string(counts.paper_12DW2) + "; " + fmt("%.4g", fpt) + " FLOPs/token" +
      (build_s >= 1 ? "; built and placed on " + rd.device.str() + " in " + fmt("%.1f", build_s) + " s" : ""));
  log(describe_groups(optimizer, mult, cfg.model));
  log("device " + rd.device.str() + (rd.bf16 ? " bf16 autocast" : " fp32") + ", " + std::to_string(threads) +
      " threads (BLAS: " + blas_description() + "), LibTorch " + compat::torch_version() + ", world " +
      std::to_string(dist.world) + "; " + std::to_string(total_steps) + " steps x " + std::to_string(cfg.batch_tokens) +
      " tokens (" + std::to_string(accum) + " x " + std::to_string(cfg.micro_batch) + " x " + std::to_string(seq) +
      " per rank), warmup " + std::to_string(cfg.warmup()) + "; matmul peak " + fmt("%.4g", peak) + " FLOP/s; attention: " + attention);
  const Plan plan = make_plan(plan_options(cfg, dist.world));
  log("memory plan per rank: weights " + format_bytes(double(plan.weights)) + ", gradients " +
      format_bytes(double(plan.gradients)) + ", AdamW moments " + format_bytes(double(plan.moments)) +
      (cfg.zero ? " (ZeRO-" + std::to_string(cfg.zero) + " over " + std::to_string(dist.world) + ")" : std::string()) + ", activations " +
      format_bytes(double(plan.activations_used)) + (cfg.activation_checkpointing ? " (recomputed)" : "") +
      "; peak " + format_bytes(double(plan.peak)));
  const KernelRecord kernels = current_kernel_record();
  log("kernels " + describe(kernels));
  if (const std::string off = fixed_set_deviation(kernels); !off.empty())
    log("warning: --kernels fixed is not in effect (" + off +
        "): this run's numbers may differ from another machine's (train re-executes itself with "
        "OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 unless run in-process or under a wrapper)");
  for (const auto& cap : caps) log("note: " + cap);
  // The data repeating, said once a run: from the first step that draws a window of the
  // split's second epoch (every rank's epoch has as many windows; each step takes accum x
  // micro-batch of them), the step where the loop's cursor enters epoch 2.
  if (const int64_t repeats_from = int64_t(sampler.windows_per_epoch()) / (accum * cfg.micro_batch) + 1;
      total_steps >= repeats_from) {
    const uint64_t split_tokens = dataset.split("train").num_tokens();
    const double times = double(total_steps) * double(cfg.batch_tokens) / double(split_tokens);
    log("note: the train split is read again from step " + std::to_string(repeats_from) + " on: " +
        std::to_string(total_steps) + " steps x " + std::to_string(cfg.batch_tokens) + " tokens read the " +
        std::to_string(split_tokens) + "-token train split " + fmt("%.2f", times) + " times over: the data repeats" +
        (times > 1 ? " (stated again in summary.json's caps)" : ""));
  }
  if (cfg.warmup() >= total_steps)
    log("warning: warmup (" + std::to_string(cfg.warmup()) + " steps) is not shorter than the run (" +
        std::to_string(total_steps) + " steps): the LR never reaches its cosine phase; see --warmup-fraction");

  // resume
  const Checkpointer checkpointer(cfg.out, cfg.keep_checkpoints, dist, /*writes=*/!cfg.no_checkpoints);
  TrainState st;
  const std::string resumed_from = checkpointer.resume(model, optimizer, rd.device, id, st, log);
  const bool resumed = !resumed_from.empty();
  if (cfg.resume && !resumed) throw Error("--resume: no complete checkpoint in " + checkpointer.dir());
  if (resumed)
    log("resuming from " + resumed_from + " (step " + std::to_string(st.step) + ", " + std::to_string(st.tokens) +
        " tokens)");
  // A finished run rerun (make, a requeued job): nothing to train, and its summary.json
  // (the memory measured while it trained) is kept as it is.
  if (resumed && st.step >= total_steps && fs::exists(cfg.out + "/summary.json")) {
    log("the run is already complete (step " + std::to_string(st.step) + " of " + std::to_string(total_steps) +
        "): " + cfg.out + "/summary.json kept, nothing to do");
    return 0;
  }
  dist.broadcast_parameters(params);  // identical weights on every rank
  RunMetrics metrics(cfg.out, leader, !cfg.probe_steps.empty(), resumed ? st.step : -1);
  const std::set<int64_t> probe_steps(cfg.probe_steps.begin(), cfg.probe_steps.end());
  const json config_json = to_json(cfg);
  // A diverged run: the checkpoints from `from_step` on hold the weights that diverged
  // (a checkpoint at step s is what step s+1's loss was computed from) and are moved
  // aside as diverged-step_N; the newest one left evaluates finite.
  auto diverged = [&](const std::string& why, int64_t from_step) {
    auto moved = leader ? checkpointer.set_aside(from_step, "diverged-") : std::vector<std::string>{};
    auto kept = checkpointer.complete();
    std::string text = "the run diverged at step " + std::to_string(from_step + 1) + ": " + why + " (lr " +
                       fmt("%g", cfg.lr_at(from_step)) + "); stopped.";
    if (!moved.empty())
      text += " " + std::to_string(moved.size()) + " checkpoint(s) from step " + std::to_string(from_step) +
              " on hold the diverging weights and were moved aside (" + fs::path(moved.front()).filename().string() +
              (moved.size() > 1 ? " ..." : "") + ").";
    text += " Last good checkpoint: " +
            (kept.empty() ? std::string("none") : kept.back().second + " (its next step's loss was finite and below the limit)") +
            ". Lower --lr (or raise --warmup-steps) and train in another --out.";
    return Error(text);
  };
  auto weights_finite = [&] {
    torch::NoGradGuard no_grad;
    for (auto& p : params)
      if (!torch::isfinite(p).all().item<bool>()) return false;
    return true;
  };
  // A checkpoint of the step the run is at, unless the newest one already is or the run
  // writes none (--no-checkpoints); returns whether one of this step is there.
  auto checkpoint_here = [&] {
    if (!checkpointer.writes()) return false;
    if (checkpointer.holds(st.step)) return true;
    if (!weights_finite()) throw diverged("non-finite weights after the update", st.step);
    std::function<void()> hook;
    if (cfg.debug_kill_at_step == st.step && cfg.debug_kill_phase == "checkpoint")
      hook = [&] { debug_kill("inside checkpoint write", st.step); };
    checkpointer.save(st, st.wall_before + seconds_since(wall_start), model, optimizer, rd.device, id, config_json,
                      hook);
    return true;
  };

  // Signals: every rank stops at the same step (the flag is summed over the ranks, one
  // scalar per step, only with more than one).
  StopSignals stop_signals;
  auto stop_requested = [&]() -> int {
    const int signal = stop_signals.received();
    if (dist.world == 1) return signal;
    const int64_t any = dist.sum(signal, rd.device);
    return signal ? signal : any > 0 ? SIGTERM : 0;
  };

  // training
  MeasuredMemory measured;
  bool state_measured = false;
  reset_peak_memory(rd.device);
  // The device's peaks since the last reset, into `peak` (the training steps' or
  // validation's) and the reserve (the device's over both)
  auto take_peaks = [&](int64_t& peak) {
    peak = std::max(peak, peak_memory(rd.device));
    measured.peak_reserved = std::max(measured.peak_reserved, peak_reserved_memory(rd.device));
  };
  // A validation pass has its own peak (memory.measured.evaluation_peak), kept out of the
  // training steps' as the plan keeps them apart.
  auto validate = [&](bool bf16) {
    take_peaks(measured.peak);
    reset_peak_memory(rd.device);
    const double loss = estimate_loss(*model, val_windows, cfg.micro_batch, rd.device, bf16);
    take_peaks(measured.evaluation_peak);
    reset_peak_memory(rd.device);
    return loss;
  };
  {
    Prefetcher prefetch(sampler, st.cursor, cfg.micro_batch, size_t(std::max(cfg.prefetch, 1)));
    model->train();
    // Readouts (train/readouts.h): a step's loss and gradient norm stay on the device until
    // the host reads every pending step's at once; on the CPU every step is one.
    const int64_t readout_every = cfg.readout_interval(rd.device.is_cpu());
    Readouts::Settings rs;
    rs.total_steps = total_steps, rs.batch_tokens = cfg.batch_tokens, rs.accum = accum, rs.log_every = cfg.log_every;
    rs.vocab_size = cfg.model.vocab_size, rs.first_step = st.step, rs.divergence_factor = cfg.divergence_factor;
    rs.flops_per_token = fpt, rs.peak_flops = peak, rs.world = dist.world;
    const bool step_waits = rd.device.is_cpu() || readout_every == 1;  // else steps share a window's time
    rs.step_waits = step_waits;
    Readouts readouts(rs, metrics, st.losses, log);
    auto stop_if_diverged = [&](const std::optional<Readouts::Divergence>& d) {
      if (d) throw diverged(d->why, d->step_before);
    };
    auto every = [&](int64_t n) { return n > 0 && st.step % n == 0; };
    StepProfile profile(cfg.profile_steps, rd.device, cfg.out + "/profile.csv", leader);
    if (!cfg.profile_steps.empty() && cfg.profile_steps.back() > total_steps)
      log("warning: --profile-steps ends at step " + std::to_string(cfg.profile_steps.back()) + ", after the run's " +
          std::to_string(total_steps) + ": no profile.csv");
    while (st.step < total_steps) {
      if (readouts.queued() == 0)
        if (const int signal = stop_requested()) {
          // the signal arrived during the last step (or before the first): a checkpoint of
          // where the run is, then out; the rerun resumes bit-identically
          const bool saved = st.step > 0 && checkpoint_here();
          const auto kept = checkpointer.complete();  // --no-checkpoints: those of an earlier run, if any
          log(std::string(StopSignals::name(signal)) + " received: stopped after step " + std::to_string(st.step) +
              " of " + std::to_string(total_steps) +
              (!checkpointer.writes() ? ", no checkpoint (--no-checkpoints); a rerun " +
                                            (kept.empty() ? std::string("starts over") : "resumes from " + kept.back().second)
               : saved ? ", checkpoint " + kept.back().second + " written; rerun the same command to resume"
                       : std::string(", nothing trained yet; rerun the same command to resume")));
          return 128 + signal;
        }
      const auto t0 = Clock::now();
      StepRecord next;
      next.step = st.step + 1, next.tokens = st.tokens + cfg.batch_tokens;
      next.lr = cfg.lr_at(st.step);
      optimizer.set_lr(next.lr);
      const bool probe_now = probe_steps.count(next.step) > 0;
      profile.before_step(next.step);
      torch::Tensor loss_sum = accumulate_gradients(model, prefetch, params, optimizer, cfg, accum, rd, st.cursor, next);
      const auto t_opt = Clock::now();
      torch::Tensor grad_norm = optimizer.reduce_gradients(params, loss_sum);
      StepRecord& rec = readouts.add(next, loss_sum, grad_norm);
      if (probe_now) {
        stop_if_diverged(readouts.check());  // a diverged step is not probed
        // under ZeRO no rank holds a whole gradient: the norms from every rank's slice
        const std::vector<double> squares = optimizer.sharded_gradient_squares();
        std::unordered_map<const void*, double> square_of;
        for (size_t i = 0; i < squares.size(); ++i) square_of[params[i].unsafeGetTensorImpl()] = squares[i];
        GradSquares from_slices;
        if (!squares.empty()) from_slices = [&](const torch::Tensor& p) { return square_of.at(p.unsafeGetTensorImpl()); };
        if (leader)
          for (auto& r : component_grad_norms(*model, from_slices))
            metrics.grad_norm(rec.step, r.layer, r.component, r.norm);
      }
      optimizer.step(clip_scale_for(grad_norm, cfg.grad_clip));
      if (step_waits) compat::cuda_synchronize(rd.device);
      rec.optimizer_ms = 1000.0 * seconds_since(t_opt);
      if (const std::string line = profile.after_step(next.step); !line.empty()) log(line);
      if (!state_measured) {
        measured = measure_state(params, optimizer);
        state_measured = true;
        if (!leader)  // rank 0's bytes go to summary.json
          std::fprintf(stderr, "train: rank %d: optimizer state %lld bytes\n", dist.rank, (long long)measured.optimizer_state);
      }
      take_peaks(measured.peak);
      st.step++;
      st.tokens += cfg.batch_tokens;
      rec.step_ms = 1000.0 * seconds_since(t0);
      const bool val_now = every(cfg.val_every) && st.step < total_steps,
                 checkpoint_now = every(cfg.checkpoint_interval()) && st.step < total_steps;
      if (int64_t(readouts.queued()) >= readout_every || st.step == total_steps || probe_now || val_now ||
          checkpoint_now || every(cfg.log_every) || cfg.debug_kill_at_step == st.step)
        stop_if_diverged(readouts.read_out());
      if (val_now) {
        double v = validate(rd.bf16);
        model->train();
        metrics.val(st.step, st.tokens, v);
        log("step " + std::to_string(st.step) + " validation loss " + fmt("%.4f", v));
      }
      if (checkpoint_now) checkpoint_here();
      if (cfg.debug_kill_at_step == st.step && cfg.debug_kill_phase == "step") debug_kill("after step", st.step);
      if (cfg.debug_kill_at_step == st.step && cfg.debug_kill_phase == "sigterm") std::raise(SIGTERM);
      if (readouts.queued() == 0) readouts.restart_window();  // validation and checkpoints left out
    }
  }

  // end of run: validation, final checkpoint, summary (the data repeating, said at the
  // start, goes into summary.json's caps)
  if (const uint64_t split_tokens = dataset.split("train").num_tokens(); uint64_t(st.tokens) > split_tokens)
    caps.push_back("the train split (" + std::to_string(split_tokens) + " tokens) was read " +
                   fmt("%.2f", double(st.tokens) / double(split_tokens)) + " times over: the run repeats data");
  const double val_loss = validate(rd.bf16);
  const double val_loss_fp32 = rd.bf16 ? validate(/*bf16=*/false) : val_loss;
  metrics.val(st.step, st.tokens, val_loss);
  const bool checkpointed = checkpoint_here();
  const double wall = st.wall_before + seconds_since(wall_start);
  if (leader) {
    const int64_t val_tokens = val_windows.defined() ? val_windows.size(0) * seq : 0;
    json summary = run_summary(cfg, st, dataset, rd, dist, id, mult, val_loss, val_tokens, wall, peak,
                               memory_json(plan, measured), caps, attention, val_loss_fp32);
    // the hash names the final checkpoint's weights; a run without one skips its cost
    if (checkpointed) summary["params_sha256"] = parameters_sha256(model);
    write_file_atomic(cfg.out + "/summary.json", summary.dump(2) + "\n");
    log("done: " + std::to_string(st.step) + " steps, final train loss " + fmt("%.4f", tail_loss(st.losses).mean) +
        ", validation loss " + fmt("%.4f", val_loss) + ", " + fmt("%.1f", wall) + " s; " + cfg.out + "/summary.json");
  }
  return 0;
}

}  // namespace

int run_training(const TrainConfig& config) {
  try {
    return run_impl(config);
  } catch (const c10::Error& e) {
    throw Error(e.what_without_backtrace());
  } catch (const fs::filesystem_error& e) {
    throw Error(e.what());
  }
}

}  // namespace shapelaw
