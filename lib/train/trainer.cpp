// The training loop: data prefetch, AdamW with warmup + cosine, gradient accumulation,
// clipping, validation, metrics, checkpoints with exact resume, summary.json.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "model/model.h"
#include "shards/dataset.h"
#include "train/checkpoint.h"
#include "train/cpu_threads.h"
#include "train/distributed.h"
#include "train/fused_adamw.h"
#include "train/torch_compat.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/cpu_runtime.h"
#include "util/error.h"

namespace shapelaw {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void debug_kill(const char* where, int64_t step) {
  std::fprintf(stderr, "train: debug: SIGKILL self at step %lld (%s)\n", (long long)step, where);
  std::fflush(stderr);
  std::raise(SIGKILL);
}

// ---------------------------------------------------------------- data prefetch
// A background thread reads micro-batches of windows (seq_len + 1 tokens each) ahead of
// the training loop. Each micro-batch carries the sampler cursor after it, so the
// checkpoint records exactly what was consumed, not what was prefetched.
struct MicroBatch {
  std::vector<int64_t> tokens;  // micro x (seq_len + 1)
  WindowSampler::Cursor after;
};

class Prefetcher {
 public:
  Prefetcher(const WindowSampler& sampler, WindowSampler::Cursor start, int64_t micro, size_t capacity)
      : sampler_(sampler), cursor_(start), micro_(micro), capacity_(std::max<size_t>(1, capacity)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  // Blocks until a micro-batch is ready; adds the wait to wait_ms; rethrows loader errors.
  MicroBatch next(double& wait_ms) {
    auto t0 = Clock::now();
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [this] { return !queue_.empty() || error_; });
    wait_ms += 1000.0 * seconds_since(t0);
    if (queue_.empty()) std::rethrow_exception(error_);
    MicroBatch b = std::move(queue_.front());
    queue_.pop_front();
    cv_.notify_all();
    return b;
  }

 private:
  void loop() {
    try {
      const size_t window = sampler_.window();
      std::vector<uint32_t> buffer(window);
      while (true) {
        MicroBatch b;
        b.tokens.resize(size_t(micro_) * window);
        for (int64_t i = 0; i < micro_; ++i) {
          sampler_.next(cursor_, buffer.data());
          std::copy(buffer.begin(), buffer.end(), b.tokens.begin() + i * window);
        }
        b.after = cursor_;
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [this] { return stop_ || queue_.size() < capacity_; });
        if (stop_) return;
        queue_.push_back(std::move(b));
        cv_.notify_all();
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = std::current_exception();
      cv_.notify_all();
    }
  }

  const WindowSampler& sampler_;
  WindowSampler::Cursor cursor_;
  int64_t micro_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<MicroBatch> queue_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

// [micro, seq+1] tokens -> (inputs, targets) on the device
std::pair<torch::Tensor, torch::Tensor> to_batch(std::vector<int64_t>& tokens, int64_t micro,
                                                 int64_t window, const torch::Device& device) {
  auto t = torch::from_blob(tokens.data(), {micro, window}, torch::kLong);
  t = device.is_cpu() ? t.clone() : t.to(device);
  return {t.slice(1, 0, window - 1), t.slice(1, 1, window)};
}

// ---------------------------------------------------------------- small file helpers
void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Keeps the lines of a JSONL/CSV file whose step is <= max_step (a resumed run drops
// what the killed run wrote after its last checkpoint). step_of returns -1 to keep.
void truncate_lines(const std::string& path, int64_t max_step,
                    const std::function<int64_t(const std::string&)>& step_of) {
  if (!fs::exists(path)) return;
  std::istringstream in(read_file(path));
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    int64_t s = -1;
    try {
      s = step_of(line);
    } catch (...) {
      continue;  // a torn last line from the killed run
    }
    if (s <= max_step) kept += line + "\n";
  }
  write_file_atomic(path, kept);
}

class LineFile {  // appended line by line, flushed after each line
 public:
  LineFile(const std::string& path, bool append) : path_(path) {
    file_ = std::fopen(path.c_str(), append ? "a" : "w");
    if (!file_) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
  }
  ~LineFile() {
    if (file_) std::fclose(file_);
  }
  void write(const std::string& line) {
    if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) < 0 || std::fflush(file_) != 0)
      throw Error(path_ + ": write failed: " + std::strerror(errno));
  }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// ---------------------------------------------------------------- checkpoints
// <out>/checkpoints/step_<12 digits>/{model.pt, optimizer.pt, rng.pt, state.json, COMPLETE}
// written into .tmp-step_<n>-<pid>/, renamed, then COMPLETE is written: a directory
// without COMPLETE is ignored and removed.
std::string checkpoint_name(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step_%012lld", (long long)step);
  return name;
}

std::vector<std::pair<int64_t, std::string>> complete_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  if (!fs::is_directory(dir)) return found;
  for (auto& entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(entry.path() / "COMPLETE")) continue;
    found.emplace_back(std::stoll(name.substr(5)), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

template <typename T>
void torch_save(const T& value, const std::string& path) {
  try {
    torch::save(value, path);
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot write checkpoint file: " + e.what_without_backtrace());
  }
  fsync_path(path);
}

// ---------------------------------------------------------------- numerics
double measure_matmul_peak(const torch::Device& device, bool bf16) {
  torch::NoGradGuard no_grad;
  const int64_t n = device.is_cuda() ? 8192 : 1024;
  auto opts = torch::TensorOptions().device(device).dtype(bf16 ? torch::kBFloat16 : torch::kFloat32);
  auto gen = at::detail::createCPUGenerator(1234);  // leaves the default generator alone
  auto a = torch::randn({n, n}, gen).to(opts), b = torch::randn({n, n}, gen).to(opts);
  auto c = torch::matmul(a, b);
  compat::cuda_synchronize(device);
  int iters = 0;
  auto t0 = Clock::now();
  do {
    c = torch::matmul(a, b);
    ++iters;
    if (device.is_cuda()) compat::cuda_synchronize(device);
  } while (seconds_since(t0) < 0.3 || iters < 3);
  c.sum().item<double>();
  return 2.0 * double(n) * n * n * iters / seconds_since(t0);
}

double global_grad_norm(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> sq;
  for (auto& p : params)
    if (p.grad().defined()) sq.push_back(p.grad().to(torch::kFloat32).norm().square());
  return sq.empty() ? 0.0 : std::sqrt(torch::stack(sq).sum().item<double>());
}

json diff_keys(const json& a, const json& b, const std::string& prefix = "") {
  json out = json::array();
  std::set<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  for (const auto& k : keys) {
    json va = a.contains(k) ? a[k] : json(), vb = b.contains(k) ? b[k] : json();
    if (va.is_object() && vb.is_object()) {
      for (auto& d : diff_keys(va, vb, prefix + k + ".")) out.push_back(d);
    } else if (va != vb) {
      out.push_back(prefix + k + ": checkpoint " + va.dump() + ", now " + vb.dump());
    }
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// ---------------------------------------------------------------- the run
int run_impl(const TrainConfig& given) {
  const auto wall_start = Clock::now();
  TrainConfig cfg = given;
  cfg.validate();
  Distributed dist = Distributed::from_env(cfg.device);
  const bool leader = dist.rank == 0;
  auto log = [&](const std::string& msg) {
    if (leader) std::fprintf(stderr, "train: %s\n", msg.c_str());
  };

  // data
  TokenDataset dataset = TokenDataset::open(cfg.data);
  if (!cfg.tokenizer_model.empty()) dataset.check_tokenizer(cfg.tokenizer_model);
  if (cfg.model.vocab_size == 0) cfg.model.vocab_size = dataset.vocab_size();
  if (cfg.model.vocab_size < int64_t(dataset.vocab_size()))
    throw Error("--vocab-size " + std::to_string(cfg.model.vocab_size) + " is smaller than the data's vocabulary (" +
                std::to_string(dataset.vocab_size()) + ")");
  cfg.model.validate();
  if (cfg.run_id.empty()) {
    fs::path p = fs::path(cfg.out).lexically_normal();
    cfg.run_id = (p.filename().empty() ? p.parent_path().filename() : p.filename()).string();
  }
  const int64_t seq = cfg.model.seq_len, window = seq + 1;
  const int64_t per_step_seqs = cfg.batch_tokens / seq;
  if (per_step_seqs % (cfg.micro_batch * dist.world) != 0)
    throw Error("--batch-tokens " + std::to_string(cfg.batch_tokens) + " = " + std::to_string(per_step_seqs) +
                " sequences is not divisible by micro_batch x world = " +
                std::to_string(cfg.micro_batch * dist.world));
  const int64_t accum = per_step_seqs / (cfg.micro_batch * dist.world);
  const int64_t total_steps = cfg.total_steps();
  const TokenSplit& train_split = dataset.split("train");
  WindowSampler sampler(train_split, size_t(window), cfg.seed, dist.rank, dist.world);

  // device and threads
  if (cfg.device == "cuda") {
    const int gpus = int(torch::cuda::device_count());
    if (!torch::cuda::is_available())
      throw Error("--device cuda: no CUDA device available (this LibTorch " + compat::torch_version() +
                  (gpus == 0 ? " sees no GPU" : "") + ")");
    if (dist.local_rank >= gpus)
      throw Error("--device cuda: LOCAL_RANK " + std::to_string(dist.local_rank) + " but this machine has " +
                  std::to_string(gpus) +
                  " visible GPU(s): one rank per GPU (under Slurm with --gpus-per-task, each rank sees one "
                  "GPU: set LOCAL_RANK=0, or let every rank see all GPUs via CUDA_VISIBLE_DEVICES)");
  }
  torch::Device device = cfg.device == "cuda" ? torch::Device(torch::kCUDA, dist.local_rank) : torch::Device(torch::kCPU);
  const bool bf16 = cfg.precision == "bf16" || (cfg.precision == "auto" && device.is_cuda());
  if (bf16 && !device.is_cuda()) throw Error("--precision bf16 needs --device cuda (CPU runs in fp32)");
  const int threads = use_cpu_threads(cfg.threads);

  // outputs
  const std::string out = cfg.out, ckpt_dir = out + "/checkpoints";
  const std::string metrics_path = out + "/metrics.jsonl", grads_path = out + "/grad_norms.csv";
  if (leader) {
    make_directories(ckpt_dir);
    write_file_atomic(out + "/.write-test", "ok\n");  // fails clearly if unwritable
    fs::remove(out + "/.write-test");
  }

  // fixed validation set: the first windows of the validation split, in order
  torch::Tensor val_windows;
  if (dataset.has_split("validation")) {
    const TokenSplit& vs = dataset.split("validation");
    int64_t n = std::min<int64_t>(std::max<int64_t>(1, cfg.val_tokens / window), int64_t(vs.num_tokens()) / window);
    if (n > 0) {
      std::vector<uint32_t> buf(size_t(n * window));
      vs.read(0, buf.size(), buf.data());
      val_windows = torch::from_blob(buf.data(), {n, window}, torch::kInt32).to(torch::kLong);
    }
  }
  if (!val_windows.defined())
    log("warning: no validation split with a full window of " + std::to_string(window) +
        " tokens: final_val_loss will be null");

  // model and optimizer
  const double peak = cfg.peak_flops > 0 ? cfg.peak_flops : measure_matmul_peak(device, bf16);
  torch::manual_seed(cfg.seed);
  Transformer model(cfg.model);
  model->to(device);
  ParamGroups groups = split_decay_groups(*model);
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  auto adam = [&](double wd) {
    return std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(cfg.lr)
                                                            .betas({cfg.beta1, cfg.beta2})
                                                            .eps(cfg.eps)
                                                            .weight_decay(wd));
  };
  param_groups.emplace_back(groups.decay, adam(cfg.weight_decay));
  param_groups.emplace_back(groups.no_decay, adam(0.0));
  torch::optim::AdamW optimizer(param_groups, torch::optim::AdamWOptions(cfg.lr));
  std::vector<torch::Tensor> all_params = model->parameters();

  const ParamCounts counts = count_parameters(cfg.model);
  const double fpt = flops_per_token(cfg.model);
  log("model " + std::to_string(cfg.model.depth) + "L x " + std::to_string(cfg.model.width) + "W (" +
      std::to_string(cfg.model.heads()) + " heads, " + cfg.model.mlp + ", " + cfg.model.norm + "): params total " +
      std::to_string(counts.total) + ", non-embedding " + std::to_string(counts.non_embedding) + ", 12DW^2 " +
      std::to_string(counts.paper_12DW2) + "; " + fmt("%.4g", fpt) + " FLOPs/token");
  log("device " + device.str() + (bf16 ? " bf16 autocast" : " fp32") + ", " + std::to_string(threads) +
      " threads (BLAS: " + blas_description() + "), LibTorch " + compat::torch_version() + ", world " + std::to_string(dist.world) + "; " +
      std::to_string(total_steps) + " steps x " + std::to_string(cfg.batch_tokens) + " tokens (" +
      std::to_string(accum) + " x " + std::to_string(cfg.micro_batch) + " x " + std::to_string(seq) +
      " per rank), warmup " + std::to_string(cfg.warmup()) + "; matmul peak " + fmt("%.4g", peak) + " FLOP/s");

  if (cfg.warmup() >= total_steps)
    log("warning: warmup (" + std::to_string(cfg.warmup()) + " steps) is not shorter than the run (" +
        std::to_string(total_steps) + " steps): the LR never reaches its cosine phase; see --warmup-fraction");

  // resume
  int64_t step = 0, tokens_seen = 0;
  WindowSampler::Cursor cursor;
  std::vector<double> losses;
  double wall_before = 0;
  const json binding = binding_config(cfg);
  auto ckpts = complete_checkpoints(ckpt_dir);
  if (cfg.resume && ckpts.empty())
    throw Error("--resume: no complete checkpoint in " + ckpt_dir);
  if (!ckpts.empty()) {
    const std::string dir = ckpts.back().second;
    json state;
    try {
      state = json::parse(read_file(dir + "/state.json"));
    } catch (const json::exception& e) {
      throw Error(dir + "/state.json: " + e.what());
    }
    json diffs = diff_keys(state.at("binding_config"), binding);
    if (!diffs.empty()) {
      std::string list;
      for (auto& d : diffs) list += "\n  " + d.get<std::string>();
      throw Error("the configuration differs from the checkpoint in " + dir +
                  " (refusing to mix runs; use another --out or delete its checkpoints):" + list);
    }
    // The world size fixes which windows each rank reads: resuming with another one
    // would replay or skip data, so it is refused like any binding option.
    if (state.contains("world_size") && state.at("world_size").get<int>() != dist.world)
      throw Error("the checkpoint in " + dir + " was written by " + std::to_string(state.at("world_size").get<int>()) +
                  " data-parallel ranks, this run has " + std::to_string(dist.world) +
                  " (the data order would change; resume with the same world size)");
    if (state.at("data_manifest_sha256") != dataset.manifest_sha256())
      throw Error("the data manifest differs from the one " + dir + " was trained on (manifest sha256 " +
                  state.at("data_manifest_sha256").get<std::string>().substr(0, 12) + "… vs " +
                  dataset.manifest_sha256().substr(0, 12) + "…)");
    try {
      torch::load(model, dir + "/model.pt", device);
      torch::load(optimizer, dir + "/optimizer.pt", device);
      std::vector<torch::Tensor> rng;
      torch::load(rng, dir + "/rng.pt");
      compat::set_cpu_rng_state(rng.at(0));
      if (rng.size() > 1) compat::set_cuda_rng_state(device, rng[1]);
    } catch (const c10::Error& e) {
      throw Error(dir + ": unreadable checkpoint: " + e.what_without_backtrace());
    }
    step = state.at("step").get<int64_t>();
    tokens_seen = state.at("tokens").get<int64_t>();
    cursor.epoch = state.at("cursor").at("epoch").get<uint64_t>();
    cursor.index = state.at("cursor").at("index").get<uint64_t>();
    losses = state.at("train_losses").get<std::vector<double>>();
    wall_before = state.value("wall_seconds", 0.0);
    if (leader) {
      auto step_of_json = [](const std::string& l) { return json::parse(l).at("step").get<int64_t>(); };
      auto step_of_csv = [](const std::string& l) -> int64_t {
        if (l.rfind("step,", 0) == 0) return -1;
        return std::stoll(l.substr(0, l.find(',')));
      };
      truncate_lines(metrics_path, step, step_of_json);
      truncate_lines(grads_path, step, step_of_csv);
    }
    log("resuming from " + dir + " (step " + std::to_string(step) + ", " + std::to_string(tokens_seen) + " tokens)");
  } else if (leader) {
    fs::remove(metrics_path);
    fs::remove(grads_path);
  }
  dist.broadcast_parameters(all_params);  // identical weights on every rank

  std::unique_ptr<LineFile> metrics, grads;
  if (leader) {
    metrics = std::make_unique<LineFile>(metrics_path, true);
    if (!cfg.probe_steps.empty()) {
      bool fresh = !fs::exists(grads_path) || fs::file_size(grads_path) == 0;
      grads = std::make_unique<LineFile>(grads_path, true);
      if (fresh) grads->write("step,layer,component,norm");
    }
  }
  const std::set<int64_t> probe_steps(cfg.probe_steps.begin(), cfg.probe_steps.end());

  auto evaluate = [&]() -> double {
    if (!val_windows.defined()) return std::nan("");
    torch::NoGradGuard no_grad;
    compat::AutocastBf16 autocast(bf16);
    double sum = 0;
    const int64_t n = val_windows.size(0);
    for (int64_t i = 0; i < n; i += cfg.micro_batch) {
      auto w = val_windows.slice(0, i, std::min(n, i + cfg.micro_batch)).to(device);
      auto loss = model->loss(w.slice(1, 0, seq), w.slice(1, 1, window));
      sum += loss.item<double>() * double(w.size(0));
    }
    return sum / double(n);
  };

  auto save_checkpoint = [&](int64_t at_step) {
    if (!leader) return;
    const std::string final_dir = ckpt_dir + "/" + checkpoint_name(at_step);
    const std::string tmp = ckpt_dir + "/.tmp-" + checkpoint_name(at_step) + "-" + std::to_string(::getpid());
    fs::remove_all(tmp);
    make_directories(tmp);
    torch_save(model, tmp + "/model.pt");
    torch_save(optimizer, tmp + "/optimizer.pt");
    std::vector<torch::Tensor> rng{compat::cpu_rng_state()};
    if (device.is_cuda()) rng.push_back(compat::cuda_rng_state(device));
    torch_save(rng, tmp + "/rng.pt");
    json state = {{"format", "shapelaw.checkpoint"},
                  {"version", 1},
                  {"step", at_step},
                  {"tokens", tokens_seen},
                  {"cursor", {{"epoch", cursor.epoch}, {"index", cursor.index}}},
                  {"train_losses", losses},
                  {"wall_seconds", wall_before + seconds_since(wall_start)},
                  {"data_manifest_sha256", dataset.manifest_sha256()},
                  {"tokenizer_sha256", dataset.tokenizer_sha256()},
                  {"world_size", dist.world},
                  {"torch_version", compat::torch_version()},
                  {"binding_config", binding},
                  {"config", to_json(cfg)}};
    write_file_atomic(tmp + "/state.json", state.dump(1) + "\n");
    if (cfg.debug_kill_at_step == at_step && cfg.debug_kill_phase == "checkpoint")
      debug_kill("inside checkpoint write", at_step);
    std::error_code ec;
    fs::remove_all(final_dir, ec);  // an incomplete leftover of a killed run
    fs::rename(tmp, final_dir, ec);
    if (ec) throw Error(final_dir + ": cannot rename checkpoint into place: " + ec.message());
    fsync_path(ckpt_dir);
    write_file_atomic(final_dir + "/COMPLETE", std::to_string(at_step) + "\n");
    // keep the newest N complete checkpoints; drop leftovers of killed writes
    auto all = complete_checkpoints(ckpt_dir);
    for (size_t i = 0; i + size_t(cfg.keep_checkpoints) < all.size(); ++i) fs::remove_all(all[i].second, ec);
    for (auto& entry : fs::directory_iterator(ckpt_dir)) {
      std::string name = entry.path().filename().string();
      bool stale_tmp = name.rfind(".tmp-", 0) == 0;
      bool incomplete = name.rfind("step_", 0) == 0 && !fs::exists(entry.path() / "COMPLETE");
      if (stale_tmp || incomplete) fs::remove_all(entry.path(), ec);
    }
  };

  // training
  {
    Prefetcher prefetch(sampler, cursor, cfg.micro_batch, size_t(std::max(cfg.prefetch, 1)));
    model->train();
    while (step < total_steps) {
      const auto t0 = Clock::now();
      const double lr = cfg.lr_at(step);
      for (auto& group : optimizer.param_groups())
        static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
      for (auto& p : all_params) p.mutable_grad() = torch::Tensor();  // the first backward writes, not adds
      double wait_ms = 0;
      torch::Tensor loss_sum = torch::zeros({}, torch::TensorOptions().device(device));
      double forward_s = 0, backward_s = 0;  // host-side phase times (exact on CPU)
      for (int64_t micro = 0; micro < accum; ++micro) {
        MicroBatch mb = prefetch.next(wait_ms);
        auto [x, y] = to_batch(mb.tokens, cfg.micro_batch, window, device);
        torch::Tensor loss;
        auto tf = Clock::now();
        {
          compat::AutocastBf16 autocast(bf16);
          loss = model->loss(x, y);
        }
        auto tb = Clock::now();
        forward_s += std::chrono::duration<double>(tb - tf).count();
        (loss / double(accum)).backward();
        backward_s += seconds_since(tb);
        loss_sum += loss.detach().to(torch::kFloat32);
        cursor = mb.after;
      }
      const auto t_opt = Clock::now();
      dist.average_gradients(all_params, loss_sum);
      const double loss = loss_sum.item<double>() / double(accum);
      const double grad_norm = global_grad_norm(all_params);
      if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
        auto kept = complete_checkpoints(ckpt_dir);
        throw Error("non-finite " + std::string(std::isfinite(loss) ? "gradient norm" : "loss") + " at step " +
                    std::to_string(step + 1) + " (loss " + fmt("%g", loss) + ", grad norm " + fmt("%g", grad_norm) +
                    ", lr " + fmt("%g", lr) + "); stopped. Last good checkpoint: " +
                    (kept.empty() ? std::string("none") : kept.back().second) + " (untouched)");
      }
      if (grads && probe_steps.count(step + 1))
        for (auto& r : component_grad_norms(*model))
          grads->write(std::to_string(step + 1) + "," + std::to_string(r.layer) + "," + r.component + "," +
                       fmt("%.9g", r.norm));
      const bool clip = cfg.grad_clip > 0 && grad_norm > cfg.grad_clip;
      adamw_step(optimizer, clip ? cfg.grad_clip / (grad_norm + 1e-6) : 1.0);
      compat::cuda_synchronize(device);
      const double optimizer_s = seconds_since(t_opt);
      ++step;
      tokens_seen += cfg.batch_tokens;
      losses.push_back(loss);
      const double step_s = seconds_since(t0);
      const double tps = double(cfg.batch_tokens) / step_s;
      const double mfu = fpt * tps / (peak * dist.world);
      if (metrics)
        metrics->write(json{{"kind", "train"}, {"step", step}, {"tokens", tokens_seen}, {"loss", loss}, {"lr", lr},
                            {"grad_norm", grad_norm}, {"tokens_per_s", tps}, {"mfu", mfu},
                            {"data_wait_ms", wait_ms}, {"step_ms", 1000.0 * step_s},
                            {"forward_ms", device.is_cpu() ? json(1000.0 * forward_s) : json()},
                            {"backward_ms", device.is_cpu() ? json(1000.0 * backward_s) : json()},
                            {"optimizer_ms", 1000.0 * optimizer_s}}
                           .dump());
      if (cfg.log_every > 0 && (step % cfg.log_every == 0 || step == total_steps))
        log("step " + std::to_string(step) + "/" + std::to_string(total_steps) + " loss " + fmt("%.4f", loss) +
            " lr " + fmt("%.3g", lr) + " gnorm " + fmt("%.3g", grad_norm) + " | " + fmt("%.0f", tps) + " tok/s, MFU " +
            fmt("%.1f%%", 100 * mfu) + ", data wait " + fmt("%.2f", wait_ms) + " ms");
      if (cfg.val_every > 0 && step % cfg.val_every == 0 && step < total_steps) {
        double v = evaluate();
        model->train();
        if (metrics) metrics->write(json{{"kind", "val"}, {"step", step}, {"tokens", tokens_seen}, {"val_loss", v}}.dump());
        log("step " + std::to_string(step) + " validation loss " + fmt("%.4f", v));
      }
      if (cfg.checkpoint_every > 0 && step % cfg.checkpoint_every == 0 && step < total_steps) save_checkpoint(step);
      if (cfg.debug_kill_at_step == step && cfg.debug_kill_phase == "step") debug_kill("after step", step);
    }
  }

  // end of run: validation, final checkpoint, summary
  const double val_loss = evaluate();
  json val_json = std::isfinite(val_loss) ? json(val_loss) : json();
  if (metrics) metrics->write(json{{"kind", "val"}, {"step", step}, {"tokens", tokens_seen}, {"val_loss", val_json}}.dump());
  auto existing = complete_checkpoints(ckpt_dir);
  if (existing.empty() || existing.back().first != step) save_checkpoint(step);

  // final train loss: mean over the last 10% of training tokens (every step has the same
  // number of tokens, so the last ceil(steps/10) steps); SE = sample sd / sqrt(n), the
  // paper's Table 3 note (ignores autocorrelation between consecutive steps).
  const size_t n_tail = std::max<size_t>(1, (losses.size() + 9) / 10);
  double mean = 0, var = 0;
  for (size_t i = losses.size() - n_tail; i < losses.size(); ++i) mean += losses[i];
  mean /= double(n_tail);
  for (size_t i = losses.size() - n_tail; i < losses.size(); ++i) var += (losses[i] - mean) * (losses[i] - mean);
  json se = n_tail > 1 ? json(std::sqrt(var / double(n_tail - 1)) / std::sqrt(double(n_tail))) : json();
  const double wall = wall_before + seconds_since(wall_start);
  if (leader) {
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
                    {"params",
                     {{"total", counts.total}, {"non_embedding", counts.non_embedding},
                      {"embedding", counts.embedding}, {"paper_12DW2", counts.paper_12DW2}}},
                    {"flops_per_token", fpt},
                    {"tokens", tokens_seen},
                    {"compute_flops", 6.0 * double(counts.non_embedding) * double(tokens_seen)},
                    {"total_flops", fpt * double(tokens_seen)},
                    {"final_val_loss", val_json},
                    {"val_tokens", val_windows.defined() ? val_windows.size(0) * seq : 0},
                    {"final_train_loss", mean},
                    {"final_train_loss_se", se},
                    {"final_train_loss_steps", n_tail},
                    {"steps", step},
                    {"wall_seconds", wall},
                    {"peak_flops", peak},
                    {"device", device.str()},
                    {"precision", bf16 ? "bf16" : "fp32"},
                    {"world_size", dist.world},
                    {"torch_version", compat::torch_version()},
                    {"blas", blas_description()},
                    {"git_rev", shapelaw_git_rev()},
                    {"data_manifest_sha256", dataset.manifest_sha256()},
                    {"tokenizer_sha256", dataset.tokenizer_sha256()},
                    {"config", to_json(cfg)}};
    if (!cfg.run_group.empty()) summary["group"] = cfg.run_group;  // fit-law: replicates of one configuration
    write_file_atomic(out + "/summary.json", summary.dump(2) + "\n");
    log("done: " + std::to_string(step) + " steps, final train loss " + fmt("%.4f", mean) + ", validation loss " +
        fmt("%.4f", val_loss) + ", " + fmt("%.1f", wall) + " s; " + out + "/summary.json");
  }
  return 0;
}

}  // namespace

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir) {
  return complete_checkpoints(out_dir + "/checkpoints");
}

json read_checkpoint_state(const std::string& checkpoint_dir) {
  const std::string path = checkpoint_dir + "/state.json";
  if (!fs::exists(checkpoint_dir + "/COMPLETE"))
    throw Error(checkpoint_dir + ": not a complete checkpoint (no COMPLETE marker)");
  try {
    json state = json::parse(read_file(path));
    if (state.value("format", "") != "shapelaw.checkpoint") throw Error(path + ": not a shapelaw checkpoint");
    if (state.value("version", 0) > 1) throw Error(path + ": checkpoint version newer than this build");
    return state;
  } catch (const json::exception& e) {
    throw Error(path + ": " + e.what());
  }
}

Transformer load_checkpoint_model(const std::string& checkpoint_dir, const torch::Device& device) {
  json state = read_checkpoint_state(checkpoint_dir);
  Transformer model(model_config_from_json(state.at("config").at("model")));
  try {
    torch::load(model, checkpoint_dir + "/model.pt", device);
  } catch (const c10::Error& e) {
    throw Error(checkpoint_dir + "/model.pt: unreadable: " + e.what_without_backtrace());
  }
  model->to(device);
  model->eval();
  return model;
}

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
