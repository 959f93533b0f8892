#include "train/checkpointer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <map>
#include <set>

#include "compat/torch_compat.h"
#include "records/versioned_json.h"
#include "train/checkpoint.h"
#include "train/checkpoint_save.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace shapelaw {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

void fsync_path(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string checkpoint_name(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof name, "step_%012lld", (long long)step);
  return name;
}

}  // namespace

std::vector<std::string> config_differences(const json& a, const json& b, const json& defaults,
                                            const std::string& prefix) {
  std::vector<std::string> out;
  std::set<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  for (const auto& k : keys) {
    json va = a.contains(k) ? a[k] : json(), vb = b.contains(k) ? b[k] : json();
    json vd = defaults.is_object() && defaults.contains(k) ? defaults[k] : json();
    if (va.is_object() && vb.is_object()) {
      for (auto& d : config_differences(va, vb, vd, prefix + k + ".")) out.push_back(d);
    } else if (!a.contains(k) && vb == vd) {
      continue;  // an option added after the checkpoint was written, left at its default
    } else if (va != vb) {
      out.push_back(prefix + k + ": checkpoint " + va.dump() + ", now " + vb.dump());
    }
  }
  return out;
}

Checkpointer::Checkpointer(std::string out_dir, int keep, const Distributed& dist, bool writes)
    : dir_(std::move(out_dir) + "/checkpoints"), keep_(keep), writes_(writes), dist_(&dist), leader_(dist.rank == 0) {}

bool Checkpointer::holds(int64_t step) const {
  const auto found = complete();
  return !found.empty() && found.back().first == step;
}

std::vector<std::pair<int64_t, std::string>> Checkpointer::complete() const {
  std::vector<std::pair<int64_t, std::string>> found;
  if (!fs::is_directory(dir_)) return found;
  for (auto& entry : fs::directory_iterator(dir_)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(entry.path() / "COMPLETE")) continue;
    found.emplace_back(std::stoll(name.substr(5)), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string Checkpointer::resume(Transformer& model, Optimizer& optimizer, const torch::Device& device,
                                 const RunIdentity& id, TrainState& st,
                                 const std::function<void(const std::string&)>& warn) const {
  auto ckpts = complete();
  if (ckpts.empty()) return "";
  // The newest checkpoint whose files match their checksums; a damaged one is moved aside
  // (damaged-step_N, kept for inspection) so that no later run or reader picks it up.
  // Every rank checks the same files and so takes the same one.
  std::string dir;
  for (auto it = ckpts.rbegin(); it != ckpts.rend() && dir.empty(); ++it) {
    const std::string why = verify_checkpoint_files(it->second);
    if (why.empty()) {
      dir = it->second;
      continue;
    }
    std::string next = std::next(it) == ckpts.rend() ? std::string("none left") : std::next(it)->second;
    if (warn) warn("warning: checkpoint " + it->second + " is damaged (" + why + "); falling back to the previous "
                   "complete checkpoint: " + next);
    if (leader_ && dist_->world == 1) {
      std::error_code ec;
      fs::rename(it->second, dir_ + "/damaged-" + fs::path(it->second).filename().string(), ec);
    }
  }
  if (dir.empty())
    throw Error("every checkpoint in " + dir_ + " is damaged (see the warnings above): delete " + dir_ +
                " to train from step 0");
  const json state = read_checkpoint_state(dir);
  auto diffs = config_differences(state.at("binding_config"), id.binding_config, id.binding_defaults);
  if (state.contains("param_groups") && state["param_groups"] != id.param_groups)
    diffs.push_back("param_groups: checkpoint " + state["param_groups"].dump() + ", now " + id.param_groups.dump());
  if (!diffs.empty()) {
    std::string list;
    for (auto& d : diffs) list += "\n  " + d;
    const bool only_length = std::all_of(diffs.begin(), diffs.end(), [](const std::string& d) {
      return d.rfind("steps: ", 0) == 0 || d.rfind("tokens: ", 0) == 0;
    });
    if (only_length)
      throw Error("the run in " + dir + " cannot be extended or shortened exactly: the learning rate follows a "
                  "warmup and a cosine over the whole run's length, so the steps already taken had the schedule of "
                  "its own length, not of the new one. Train the longer run from step 0 in another --out (the same "
                  "options, the new --steps or --tokens); this run's checkpoints stay valid for `train eval` and "
                  "probe-grads:" + list);
    throw Error("the configuration differs from the checkpoint in " + dir +
                " (refusing to mix runs; use another --out or delete its checkpoints):" + list);
  }
  // The world size fixes which windows each rank reads: resuming with another one
  // would replay or skip data, so it is refused like any binding option.
  if (state.contains("world_size") && state.at("world_size").get<int>() != id.world_size)
    throw Error("the checkpoint in " + dir + " was written by " + std::to_string(state.at("world_size").get<int>()) +
                " data-parallel ranks, this run has " + std::to_string(id.world_size) +
                " (the data order would change; resume with the same world size)");
  if (state.at("data_manifest_sha256") != id.data_manifest_sha256)
    throw Error("the data manifest differs from the one " + dir + " was trained on (manifest sha256 " +
                state.at("data_manifest_sha256").get<std::string>().substr(0, 12) + "… vs " +
                id.data_manifest_sha256.substr(0, 12) + "…)");
  try {
    torch::load(model, dir + "/model.pt", device);
    // Testing only (scripts/gpu-check.sh proves with it that its resume check can fail):
    // SHAPELAW_DEBUG_FAULT=resume-without-optimizer plants a broken resume, the AdamW
    // moments and step count left at zero.
    const char* fault = std::getenv("SHAPELAW_DEBUG_FAULT");
    if (fault && std::string(fault) == "resume-without-optimizer")
      std::fprintf(stderr, "train: debug: SHAPELAW_DEBUG_FAULT=%s: the optimizer state is NOT loaded\n", fault);
    else
      optimizer.load(dir + "/" + optimizer.file_name(optimizer.sharded() ? dist_->rank : 0), device);
    std::vector<torch::Tensor> rng;
    torch::load(rng, dir + "/rng.pt");
    compat::set_cpu_rng_state(rng.at(0));
    if (rng.size() > 1) compat::set_cuda_rng_state(device, rng[1]);
  } catch (const c10::Error& e) {
    throw Error(dir + ": unreadable checkpoint: " + e.what_without_backtrace());
  }
  st.step = state.at("step").get<int64_t>();
  st.tokens = state.at("tokens").get<int64_t>();
  st.cursor.epoch = state.at("cursor").at("epoch").get<uint64_t>();
  st.cursor.index = state.at("cursor").at("index").get<uint64_t>();
  st.losses = state.at("train_losses").get<std::vector<double>>();
  st.wall_before = state.value("wall_seconds", 0.0);
  return dir;
}

void Checkpointer::save(const TrainState& st, double wall_seconds, Transformer& model, const Optimizer& optimizer,
                        const torch::Device& device, const RunIdentity& id, const json& config,
                        const std::function<void()>& before_rename) const {
  const bool sharded = optimizer.sharded();
  if (!writes_ || (!leader_ && !sharded)) return;
  const std::string final_dir = dir_ + "/" + checkpoint_name(st.step);
  const std::string tmp = dir_ + "/.tmp-" + checkpoint_name(st.step) + (sharded ? "" : "-" + std::to_string(::getpid()));
  // A failed write (a full disk) leaves no partial directory and the earlier checkpoints
  // as they were; the message says which one a rerun resumes from.
  auto failed = [&](const std::string& why) -> Error {
    std::error_code ec;
    if (leader_) fs::remove_all(tmp, ec);
    auto kept = complete();
    return Error("checkpoint of step " + std::to_string(st.step) + " not written: " + why + "; " +
                 (kept.empty() ? std::string("no earlier checkpoint exists")
                               : "the earlier checkpoints are intact, a rerun resumes from " + kept.back().second));
  };
  std::map<std::string, std::string> sums;
  try {
    if (leader_) {
      fs::remove_all(tmp);
      make_directories(tmp);
    }
    if (sharded) {
      dist_->sum(0, device);  // the directory exists for every rank
      int bad = 0;
      std::string why;
      try {
        const std::string path = tmp + "/" + optimizer.file_name(dist_->rank);
        write_checksum_sidecar(path, optimizer.save(path));
      } catch (const std::exception& e) {
        bad = 1, why = e.what();
      }
      const int64_t failures = dist_->sum(bad, device);
      if (bad) throw Error(why);
      if (failures > 0)
        throw Error(tmp + ": " + std::to_string(failures) + " rank(s) could not write their optimizer slice");
      if (!leader_) return;
      for (int r = 0; r < dist_->world; ++r)
        sums[optimizer.file_name(r)] = take_checksum_sidecar(tmp + "/" + optimizer.file_name(r));
    } else {
      sums[optimizer.file_name(0)] = optimizer.save(tmp + "/" + optimizer.file_name(0));
    }
    sums["model.pt"] = save_checkpoint_file(model, tmp + "/model.pt");
    std::vector<torch::Tensor> rng{compat::cpu_rng_state()};
    if (device.is_cuda()) rng.push_back(compat::cuda_rng_state(device));
    sums["rng.pt"] = save_checkpoint_file(rng, tmp + "/rng.pt");
    json state = {{"format", kCheckpointFormat},
                  {"version", kCheckpointVersion},
                  {"step", st.step},
                  {"tokens", st.tokens},
                  {"cursor", {{"epoch", st.cursor.epoch}, {"index", st.cursor.index}}},
                  {"train_losses", st.losses},
                  {"wall_seconds", wall_seconds},
                  {"data_manifest_sha256", id.data_manifest_sha256},
                  {"tokenizer_sha256", id.tokenizer_sha256},
                  {"tokenizer_kind", id.tokenizer_kind},
                  {"world_size", id.world_size},
                  {"torch_version", compat::torch_version()},
                  {"binding_config", id.binding_config},
                  {"param_groups", id.param_groups},
                  {"config", config}};
    const std::string state_text = state.dump(1) + "\n";
    write_file_atomic(tmp + "/state.json", state_text);
    sums["state.json"] = sha256_hex(state_text);
    write_checksums(tmp, sums);
    if (before_rename) before_rename();
    std::error_code ec;
    fs::remove_all(final_dir, ec);  // an incomplete leftover of a killed run
    fs::rename(tmp, final_dir, ec);
    if (ec) throw Error(final_dir + ": cannot rename checkpoint into place: " + ec.message());
    fsync_path(dir_);
    write_file_atomic(final_dir + "/COMPLETE", std::to_string(st.step) + "\n");
  } catch (const Error& e) {
    throw failed(e.what());
  } catch (const c10::Error& e) {
    throw failed(e.what_without_backtrace());
  } catch (const fs::filesystem_error& e) {
    throw failed(e.what());
  }
  // keep the newest N complete checkpoints; drop leftovers of killed writes
  std::error_code ec;
  auto all = complete();
  for (size_t i = 0; i + size_t(keep_) < all.size(); ++i) fs::remove_all(all[i].second, ec);
  for (auto& entry : fs::directory_iterator(dir_)) {
    std::string name = entry.path().filename().string();
    bool stale_tmp = name.rfind(".tmp-", 0) == 0;
    bool incomplete = name.rfind("step_", 0) == 0 && !fs::exists(entry.path() / "COMPLETE");
    if (stale_tmp || incomplete) fs::remove_all(entry.path(), ec);
  }
}

std::vector<std::string> Checkpointer::set_aside(int64_t from_step, const std::string& prefix) const {
  std::vector<std::string> moved;
  if (!leader_) return moved;
  for (auto& [step, path] : complete()) {
    if (step < from_step) continue;
    const std::string to = dir_ + "/" + prefix + checkpoint_name(step);
    std::error_code ec;
    fs::remove_all(to, ec);
    fs::rename(path, to, ec);
    if (ec) throw Error(path + ": cannot move aside to " + to + ": " + ec.message());
    moved.push_back(to);
  }
  return moved;
}

// ---------------------------------------------------------------- readers (checkpoint.h)
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir) {
  return Checkpointer(out_dir, 1, Distributed::single()).complete();
}

json read_checkpoint_state(const std::string& checkpoint_dir) {
  if (!fs::exists(checkpoint_dir + "/COMPLETE"))
    throw Error(checkpoint_dir + ": not a complete checkpoint (no COMPLETE marker)");
  return records::read_versioned_json(checkpoint_dir + "/state.json", kCheckpointFormat, kCheckpointVersion);
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

}  // namespace shapelaw
