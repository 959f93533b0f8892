// probe-grads measure: load a train checkpoint, run fixed batches, record per-layer
// gradient norms (model/model.h's component_grad_norms, as train --probe-steps does).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "model/model.h"
#include "probe/measure.h"
#include "probe/measure_torch.h"
#include "records/run_summary.h"
#include "shards/dataset.h"
#include "train/cpu_threads.h"
#include "train/kernel_record.h"
#include "compat/torch_compat.h"
#include "train/run_checkpoint.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/progress.h"

namespace shapelaw::probe {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The expected tensors of a module (parameters, buffers, children) against an archive's keys.
void check_archive(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& prefix,
                   std::vector<std::string>& problems) {
  std::set<std::string> expected;
  for (auto& p : module.named_parameters(/*recurse=*/false)) expected.insert(p.key());
  for (auto& b : module.named_buffers(/*recurse=*/false)) expected.insert(b.key());
  for (auto& c : module.named_children()) expected.insert(c.key());
  std::set<std::string> present;
  for (auto& k : archive.keys())
    if (k != "training") present.insert(k);
  for (auto& k : present)
    if (!expected.count(k)) problems.push_back("unexpected tensor '" + prefix + k + "'");
  for (auto& k : expected)
    if (!present.count(k)) problems.push_back("missing tensor '" + prefix + k + "'");
  for (auto& c : module.named_children()) {
    if (!present.count(c.key())) continue;
    torch::serialize::InputArchive child;
    if (archive.try_read(c.key(), child)) check_archive(*c.value(), child, prefix + c.key() + ".", problems);
  }
}

}  // namespace

// ---------------------------------------------------------------- torch side
std::vector<ComponentNorm> batch_grad_norms(TransformerImpl& model, const std::vector<torch::Tensor>& micro_windows,
                                            bool bf16, double* loss_out) {
  for (auto& p : model.parameters())
    if (p.grad().defined()) p.grad().zero_();
  const double n = double(micro_windows.size());
  double loss_sum = 0;
  for (const auto& w : micro_windows) {
    const int64_t T = w.size(1) - 1;
    torch::Tensor loss;
    {
      compat::AutocastBf16 autocast(bf16);
      loss = model.loss(w.slice(1, 0, T), w.slice(1, 1, T + 1));
    }
    (loss / n).backward();
    loss_sum += loss.detach().to(torch::kFloat32).item<double>();
  }
  if (loss_out) *loss_out = loss_sum / n;
  return component_grad_norms(model);
}

GradProfile average_norms(const std::vector<std::vector<ComponentNorm>>& per_batch, int depth) {
  GradProfile p;
  if (per_batch.empty()) return p;
  const size_t rows = per_batch.front().size();
  const double k = double(per_batch.size());
  for (size_t i = 0; i < rows; ++i) {
    double mean = 0, var = 0;
    for (const auto& b : per_batch) mean += b.at(i).norm;
    mean /= k;
    for (const auto& b : per_batch) var += (b.at(i).norm - mean) * (b.at(i).norm - mean);
    ProfileRow r;
    r.layer = per_batch.front()[i].layer;
    r.component = per_batch.front()[i].component;
    r.norm = mean;
    r.norm_sd = k > 1 ? std::sqrt(var / (k - 1)) : 0.0;
    p.rows.push_back(r);
  }
  p.meta = {{"format", kGradProfileFormat}, {"version", kGradProfileVersion}, {"depth", depth}, {"batches", int(k)}};
  compute_ratios(p);
  return p;
}

void load_model_checked(TransformerImpl& model, const std::string& path, const torch::Device& device) {
  if (!fs::exists(path)) throw Error(located(path, 0, "no such file (incomplete checkpoint?)"));
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto& p : model.named_parameters()) shapes[p.key()] = p.value().sizes().vec();
  for (auto& b : model.named_buffers()) shapes[b.key()] = b.value().sizes().vec();
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path, device);
  } catch (const c10::Error& e) {
    throw Error(located(path, 0, std::string("unreadable checkpoint: ") + e.what_without_backtrace()));
  }
  std::vector<std::string> problems;
  check_archive(model, archive, "", problems);
  if (problems.empty()) {
    try {
      model.load(archive);
    } catch (const c10::Error& e) {
      problems.push_back(e.what_without_backtrace());
    }
  }
  if (problems.empty()) {
    auto shape_str = [](const std::vector<int64_t>& s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
      return out + "]";
    };
    for (auto& p : model.named_parameters())
      if (p.value().sizes().vec() != shapes[p.key()])
        problems.push_back("'" + p.key() + "' has shape " + shape_str(p.value().sizes().vec()) + ", the model needs " +
                           shape_str(shapes[p.key()]));
  }
  if (!problems.empty()) {
    std::string list;
    for (size_t i = 0; i < problems.size() && i < 4; ++i) list += (i ? "; " : "") + problems[i];
    if (problems.size() > 4) list += "; and " + std::to_string(problems.size() - 4) + " more";
    const auto& c = model.config;
    throw Error(located(path, 0, "checkpoint does not fit the model its state.json describes (" +
                                     std::to_string(c.depth) + " layers, width " + std::to_string(c.width) + ", " +
                                     c.mlp + ", " + c.norm + (c.tie_embeddings ? ", tied" : "") +
                                     "): incompatible checkpoint: " + list));
  }
  model.to(device);
}

// ---------------------------------------------------------------- measure
GradProfile measure_gradients(const MeasureOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (o.batches < 1 || o.batch_size < 1) throw Error("--batches and --batch-size must be >= 1");
  const RunCheckpoint run = open_run_checkpoint(o.run, o.step, "probe-grads");
  const CheckpointRef& ref = run.ref;
  const TrainConfig& cfg = run.config;
  const records::RunSummary& summary = run.summary;
  const std::string state_path = ref.dir + "/state.json", data = o.data.empty() ? cfg.data : o.data;
  TokenDataset dataset = open_run_data(run, o.data, o.tokenizer_model);

  // device, precision, threads
  std::string dev = o.device;
  if (dev != "cpu" && dev.rfind("cuda", 0) != 0) throw Error("--device must be cpu or cuda[:N] (got '" + dev + "')");
  if (dev.rfind("cuda", 0) == 0 && !torch::cuda::is_available())
    throw Error("--device " + dev + ": no CUDA device available (this LibTorch " + compat::torch_version() + ")");
  torch::Device device(dev);
  std::string precision = o.precision;
  if (precision.empty()) {
    precision = "fp32";
    if (o.replay_train_step)
      precision = (cfg.precision == "bf16" || (cfg.precision == "auto" && device.is_cuda())) ? "bf16" : "fp32";
  }
  if (precision != "fp32" && precision != "bf16") throw Error("--precision must be fp32 or bf16");
  const bool bf16 = precision == "bf16";
  if (bf16 && !device.is_cuda()) throw Error("--precision bf16 needs --device cuda");
  const int threads = use_cpu_threads(o.threads);

  // model
  torch::manual_seed(0);  // the init is overwritten by the checkpoint; keep it reproducible anyway
  Transformer model(cfg.model);
  load_model_checked(*model, ref.dir + "/model.pt", device);
  model->train();

  // batches
  const int64_t seq = cfg.model.seq_len, window = seq + 1;
  std::vector<std::vector<torch::Tensor>> batches;  // batch -> micro-batches [m, window]
  auto to_tensor = [&](const std::vector<uint32_t>& tokens, int64_t rows) {
    return torch::from_blob(const_cast<uint32_t*>(tokens.data()), {rows, window}, torch::kInt32)
        .to(torch::kLong)
        .to(device);
  };
  json meta;
  std::string split_name = o.split;
  if (o.replay_train_step) {
    split_name = "train";
    if (summary.world_size != 1)
      throw Error("--replay-train-step: the run used " + std::to_string(summary.world_size) +
                  " data-parallel ranks; replay reproduces single-process runs only");
    const int64_t per_step = cfg.batch_tokens / seq, accum = per_step / cfg.micro_batch;
    if (per_step % cfg.micro_batch != 0 || accum < 1)
      throw Error(located(state_path, 0, "batch_tokens / seq_len is not a multiple of micro_batch"));
    WindowSampler sampler(dataset.split("train"), size_t(window), cfg.seed);
    WindowSampler::Cursor cursor;
    cursor.epoch = ref.state.at("cursor").at("epoch").get<uint64_t>();
    cursor.index = ref.state.at("cursor").at("index").get<uint64_t>();
    std::vector<torch::Tensor> micros;
    std::vector<uint32_t> buf(size_t(cfg.micro_batch * window));
    for (int64_t m = 0; m < accum; ++m) {
      for (int64_t i = 0; i < cfg.micro_batch; ++i) sampler.next(cursor, buf.data() + i * window);
      micros.push_back(to_tensor(buf, cfg.micro_batch));
    }
    batches.push_back(micros);
    meta["batches"] = 1;
    meta["batch_size"] = per_step;
    meta["micro_batch"] = cfg.micro_batch;
    meta["seed"] = cfg.seed;
    meta["equals_train_log_step"] = ref.step + 1;
  } else {
    const TokenSplit& split = dataset.split(o.split);
    if (int64_t(split.num_tokens()) < window)
      throw Error(located(data, 0, "the " + o.split + " split has " + std::to_string(split.num_tokens()) +
                                       " tokens, fewer than one window of " + std::to_string(window)));
    WindowSampler sampler(split, size_t(window), o.seed);
    const uint64_t need = uint64_t(o.batches) * uint64_t(o.batch_size);
    if (need > sampler.windows_per_epoch())
      throw Error(located(data, 0, "the " + o.split + " split holds " + std::to_string(sampler.windows_per_epoch()) +
                                       " windows of " + std::to_string(window) + " tokens; --batches x --batch-size = " +
                                       std::to_string(need) + " would repeat some (lower them)"));
    const int micro = o.micro_batch > 0 ? std::min(o.micro_batch, o.batch_size) : o.batch_size;
    WindowSampler::Cursor cursor;
    for (int b = 0; b < o.batches; ++b) {
      std::vector<torch::Tensor> micros;
      for (int start = 0; start < o.batch_size; start += micro) {
        const int rows = std::min(micro, o.batch_size - start);
        std::vector<uint32_t> buf(size_t(rows * window));
        for (int i = 0; i < rows; ++i) sampler.next(cursor, buf.data() + size_t(i) * size_t(window));
        micros.push_back(to_tensor(buf, rows));
      }
      batches.push_back(micros);
    }
    meta["batches"] = o.batches;
    meta["batch_size"] = o.batch_size;
    meta["micro_batch"] = micro;
    meta["seed"] = o.seed;
  }
  // probe-grads always runs the fixed set (tools/probe-grads.cpp): recorded, so that a
  // process that was not re-executed shows it
  meta["kernels"] = to_json(current_kernel_record());

  std::vector<std::vector<ComponentNorm>> per_batch;
  double loss_sum = 0;
  try {
    for (const auto& micros : batches) {
      double loss = 0;
      per_batch.push_back(batch_grad_norms(*model, micros, bf16, &loss));
      loss_sum += loss;
    }
  } catch (const c10::Error& e) {
    throw Error(std::string("gradient pass failed: ") + e.what_without_backtrace());
  }
  GradProfile p = average_norms(per_batch, cfg.model.depth);
  const auto& m = cfg.model;
  p.meta.update(meta);
  p.meta.update(json{{"source", o.replay_train_step ? "train-replay" : "validation"},
                     {"run_id", cfg.run_id.empty() ? fs::absolute(ref.run_dir).lexically_normal().filename().string()
                                                   : cfg.run_id},
                     {"run_dir", ref.run_dir},
                     {"checkpoint", ref.dir},
                     {"step", ref.step},
                     {"tokens", ref.state.value("tokens", json())},
                     {"depth", m.depth},
                     {"width", m.width},
                     {"heads", m.heads()},
                     {"head_dim", m.head_dim},
                     {"seq_len", m.seq_len},
                     {"vocab_size", m.vocab_size},
                     {"mlp", m.mlp},
                     {"norm", m.norm},
                     {"split", split_name},
                     {"data", data},
                     {"data_manifest_sha256", dataset.manifest_sha256()},
                     {"tokenizer_sha256", dataset.tokenizer_sha256()},
                     {"tokenizer_kind", dataset.tokenizer().kind},
                     {"loss_mean", loss_sum / double(batches.size())},
                     {"device", device.str()},
                     {"precision", precision},
                     {"threads", threads},
                     {"torch_version", compat::torch_version()},
                     {"git_rev", shapelaw_git_rev()},
                     {"wall_seconds", seconds_since(t0)}});
  return p;
}

}  // namespace shapelaw::probe
