#include "train/run_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "train/checkpoint.h"
#include "train/checkpoint_files.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string short_hash(const std::string& h) { return h.size() > 12 ? h.substr(0, 12) + "…" : h; }

}  // namespace

CheckpointRef locate_checkpoint(const std::string& run, long long step, const std::string& tool) {
  if (!fs::exists(run)) throw Error(located(run, 0, "no such run directory"));
  fs::path p = fs::path(run).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  CheckpointRef ref;
  if (fs::exists(p / "state.json")) {  // one checkpoint directory
    const std::string name = p.filename().string();
    // step_N, or one a run set aside by name: diverged-step_N, damaged-step_N
    const bool set_aside = name.rfind("diverged-step_", 0) == 0 || name.rfind("damaged-step_", 0) == 0;
    if (name.rfind("step_", 0) != 0 && !set_aside)
      throw Error(located(run, 0, "a state.json outside checkpoints/step_N/"));
    if (!fs::exists(p / "COMPLETE")) throw Error(located(run, 0, "incomplete checkpoint (no COMPLETE marker)"));
    ref.step = std::stoll(name.substr(name.find("step_") + 5));
    if (step >= 0 && step != ref.step)
      throw Error(located(run, 0, "this checkpoint is step " + std::to_string(ref.step) + ", not --step " +
                                      std::to_string(step)));
    ref.dir = p.string();
    ref.run_dir = p.parent_path().parent_path().string();
  } else {
    if (fs::is_directory(p / "checkpoints")) {
      ref.run_dir = p.string();
    } else if (p.filename() == "checkpoints") {
      ref.run_dir = p.parent_path().string();
    } else {
      throw Error(located(run, 0, "not a train run (no checkpoints/ directory)"));
    }
    if (ref.run_dir.empty()) ref.run_dir = ".";
    const std::string ckpt_dir = ref.run_dir + "/checkpoints";
    auto all = list_checkpoints(ref.run_dir);
    if (all.empty()) throw Error(located(ckpt_dir, 0, "no complete checkpoint"));
    if (step < 0) {
      // the newest whose files match their checksums; a damaged one is named and skipped
      for (auto it = all.rbegin(); it != all.rend() && ref.dir.empty(); ++it) {
        const std::string why = verify_checkpoint_files(it->second, {"state.json", "model.pt"});
        if (why.empty()) {
          ref.step = it->first;
          ref.dir = it->second;
        } else {
          std::fprintf(stderr, "%s: warning: checkpoint %s is damaged (%s); falling back to the previous complete one\n",
                       tool.c_str(), it->second.c_str(), why.c_str());
        }
      }
      if (ref.dir.empty()) throw Error(located(ckpt_dir, 0, "every complete checkpoint is damaged (see the warnings)"));
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
  if (const std::string why = verify_checkpoint_files(ref.dir, {"state.json", "model.pt"}); !why.empty())
    throw Error(ref.dir + ": damaged checkpoint: " + why);
  ref.state = read_checkpoint_state(ref.dir);
  if (!ref.state.contains("config") || !ref.state.contains("step"))
    throw Error(located(ref.dir + "/state.json", 0, "lacks \"config\" or \"step\""));
  return ref;
}

RunCheckpoint open_run_checkpoint(const std::string& run, long long step, const std::string& tool) {
  RunCheckpoint r;
  r.ref = locate_checkpoint(run, step, tool);
  const std::string state_path = r.ref.dir + "/state.json";
  try {
    r.config = train_config_from_json(r.ref.state["config"]);
  } catch (const Error& e) {
    throw Error(located(state_path, 0, std::string("config: ") + e.what()));
  } catch (const json::exception& e) {
    throw Error(located(state_path, 0, std::string("config: ") + e.what()));
  }
  try {
    r.config.model.validate();
  } catch (const Error& e) {
    throw Error(located(state_path, 0, e.what()));
  }
  if (fs::exists(r.ref.run_dir + "/summary.json")) r.summary = records::read_run_summary(r.ref.run_dir + "/summary.json");
  return r;
}

TokenDataset open_run_data(const RunCheckpoint& run, const std::string& data_override,
                           const std::string& tokenizer_model) {
  const TrainConfig& cfg = run.config;
  const std::string state_path = run.ref.dir + "/state.json";
  const std::string data = data_override.empty() ? cfg.data : data_override;
  if (data.empty()) throw Error(located(state_path, 0, "the run records no --data: pass --data"));
  if (!fs::exists(data))
    throw Error(located(data, 0, data_override.empty() ? "the run's data is not there any more: pass --data"
                                                       : "no such shard directory"));
  TokenDataset dataset = TokenDataset::open(data);
  if (!tokenizer_model.empty()) dataset.check_tokenizer(tokenizer_model);
  const std::string run_manifest = run.ref.state.value("data_manifest_sha256", "");
  // The run's tokenizer: recorded in the checkpoint (since the trainer split), in
  // summary.json, or else in the run's own manifest if it is still the one trained on.
  std::string run_tokenizer = run.ref.state.value("tokenizer_sha256", run.summary.tokenizer_sha256);
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
                                 "summary.json and its own manifest is gone or changed): use the run's data"));
  }
  if (int64_t(dataset.vocab_size()) > cfg.model.vocab_size)
    throw Error(located(data, 0, "vocabulary " + std::to_string(dataset.vocab_size()) +
                                     " is larger than the model's " + std::to_string(cfg.model.vocab_size)));
  return dataset;
}

}  // namespace shapelaw
