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
#include "shards/dataset.h"
#include "train/cpu_threads.h"
#include "compat/torch_compat.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/error.h"

namespace shapelaw::probe {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json(const std::string& path) {
  try {
    return json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(located(path, 0, std::string("not valid JSON: ") + e.what()));
  }
}

std::string short_hash(const std::string& h) { return h.size() > 12 ? h.substr(0, 12) + "…" : h; }

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
  p.meta = {{"format", "shapelaw.grad_profile"}, {"version", 1}, {"depth", depth}, {"batches", int(k)}};
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

// ---------------------------------------------------------------- checkpoints
std::vector<std::pair<long long, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<long long, std::string>> found;
  if (!fs::is_directory(dir)) return found;
  for (auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || name.size() <= 5 || !fs::exists(entry.path() / "COMPLETE")) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    found.emplace_back(std::stoll(name.substr(5)), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

CheckpointRef locate_checkpoint(const std::string& run, long long step) {
  if (!fs::exists(run)) throw Error(located(run, 0, "no such run directory"));
  fs::path p = fs::path(run).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string ckpt_dir;
  CheckpointRef ref;
  if (fs::exists(p / "state.json")) {  // one checkpoint directory
    const std::string name = p.filename().string();
    if (name.rfind("step_", 0) != 0) throw Error(located(run, 0, "a state.json outside checkpoints/step_N/"));
    if (!fs::exists(p / "COMPLETE")) throw Error(located(run, 0, "incomplete checkpoint (no COMPLETE marker)"));
    ref.step = std::stoll(name.substr(5));
    if (step >= 0 && step != ref.step)
      throw Error(located(run, 0, "this checkpoint is step " + std::to_string(ref.step) + ", not --step " +
                                      std::to_string(step)));
    ref.dir = p.string();
    ref.run_dir = p.parent_path().parent_path().string();
  } else {
    if (fs::is_directory(p / "checkpoints")) {
      ckpt_dir = (p / "checkpoints").string();
      ref.run_dir = p.string();
    } else if (p.filename() == "checkpoints") {
      ckpt_dir = p.string();
      ref.run_dir = p.parent_path().string();
    } else {
      throw Error(located(run, 0, "not a train run (no checkpoints/ directory)"));
    }
    auto all = list_checkpoints(ckpt_dir);
    if (all.empty()) throw Error(located(ckpt_dir, 0, "no complete checkpoint"));
    if (step < 0) {
      ref.step = all.back().first;
      ref.dir = all.back().second;
    } else {
      auto it = std::find_if(all.begin(), all.end(), [&](auto& c) { return c.first == step; });
      if (it == all.end()) {
        std::string steps;
        for (auto& c : all) steps += (steps.empty() ? "" : ", ") + std::to_string(c.first);
        throw Error(located(ckpt_dir, 0, "no complete checkpoint for step " + std::to_string(step) +
                                             " (steps present: " + steps + ")"));
      }
      ref.step = it->first;
      ref.dir = it->second;
    }
  }
  if (ref.run_dir.empty()) ref.run_dir = ".";
  ref.state = read_json(ref.dir + "/state.json");
  if (ref.state.value("format", "") != "shapelaw.checkpoint")
    throw Error(located(ref.dir + "/state.json", 0, "not a shapelaw checkpoint (format " +
                                                        ref.state.value("format", std::string("missing")) + ")"));
  if (ref.state.value("version", 0) > 1)
    throw Error(located(ref.dir + "/state.json", 0, "checkpoint version " + ref.state["version"].dump() +
                                                        " is newer than this probe-grads (1)"));
  if (!ref.state.contains("config") || !ref.state.contains("step"))
    throw Error(located(ref.dir + "/state.json", 0, "lacks \"config\" or \"step\""));
  return ref;
}

// ---------------------------------------------------------------- measure
GradProfile measure_gradients(const MeasureOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  if (o.batches < 1 || o.batch_size < 1) throw Error("--batches and --batch-size must be >= 1");
  CheckpointRef ref = locate_checkpoint(o.run, o.step);
  const std::string state_path = ref.dir + "/state.json";
  TrainConfig cfg;
  try {
    cfg = train_config_from_json(ref.state["config"]);
  } catch (const Error& e) {
    throw Error(located(state_path, 0, std::string("config: ") + e.what()));
  } catch (const json::exception& e) {
    throw Error(located(state_path, 0, std::string("config: ") + e.what()));
  }
  try {
    cfg.model.validate();
  } catch (const Error& e) {
    throw Error(located(state_path, 0, e.what()));
  }
  json summary = json::object();
  if (fs::exists(ref.run_dir + "/summary.json")) summary = read_json(ref.run_dir + "/summary.json");

  // data, and proof that its token ids mean what they meant in training
  std::string data = o.data.empty() ? cfg.data : o.data;
  if (data.empty()) throw Error(located(state_path, 0, "the run records no --data: pass --data"));
  if (!fs::exists(data))
    throw Error(located(data, 0, o.data.empty() ? "the run's data is not there any more: pass --data"
                                                : "no such shard directory"));
  TokenDataset dataset = TokenDataset::open(data);
  if (!o.tokenizer_model.empty()) dataset.check_tokenizer(o.tokenizer_model);
  const std::string run_manifest = ref.state.value("data_manifest_sha256", "");
  std::string run_tokenizer = summary.value("tokenizer_sha256", "");
  if (run_tokenizer.empty() && !cfg.data.empty() && fs::exists(cfg.data)) {
    try {
      TokenDataset original = TokenDataset::open(cfg.data);
      if (original.manifest_sha256() == run_manifest) run_tokenizer = original.tokenizer_sha256();
    } catch (const Error&) {
    }
  }
  if (!run_tokenizer.empty()) {
    if (dataset.tokenizer_sha256() != run_tokenizer)
      throw Error(located(data, 0, "the shard manifest's tokenizer (sha256 " + short_hash(dataset.tokenizer_sha256()) +
                                       ") differs from the one the run was trained with (" +
                                       short_hash(run_tokenizer) + "): token ids would mean other words"));
  } else if (dataset.manifest_sha256() != run_manifest) {
    throw Error(located(data, 0, "cannot confirm that this manifest's tokenizer is the run's (the run has no "
                                 "summary.json and its own manifest is gone or changed): measure with the run's data"));
  }
  if (int64_t(dataset.vocab_size()) > cfg.model.vocab_size)
    throw Error(located(data, 0, "vocabulary " + std::to_string(dataset.vocab_size()) +
                                     " is larger than the model's " + std::to_string(cfg.model.vocab_size)));

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
    if (summary.value("world_size", 1) != 1)
      throw Error("--replay-train-step: the run used " + summary["world_size"].dump() +
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
                     {"loss_mean", loss_sum / double(batches.size())},
                     {"device", device.str()},
                     {"precision", precision},
                     {"threads", threads},
                     {"torch_version", compat::torch_version()},
                     {"git_rev", shapelaw_git_rev()},
                     {"wall_seconds", std::chrono::duration<double>(Clock::now() - t0).count()}});
  return p;
}

}  // namespace shapelaw::probe
