#pragma once
// summary.json (docs/formats.md "summary.json", written by `train`): the one reader. fit-law,
// audit and probe-grads take its typed fields from here; fit-law also maps columns of the
// whole object (`json`) by dotted path (--col loss=final_train_loss).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shapelaw::records {

inline constexpr const char* kSummaryFormat = "shapelaw.summary";
inline constexpr int kSummaryVersion = 1;

struct RunSummary {
  std::string path;
  nlohmann::json json;  // the whole record
  std::string run_id, group, tokenizer_sha256, tokenizer_kind;  // kind: "" in records from before GPT-2's
  int64_t depth = 0, width = 0, heads = 0, head_dim = 0, vocab_size = 0;  // 0: absent
  std::optional<std::string> mlp, norm;
  std::optional<bool> tie_embeddings;
  double params_total = -1;  // < 0: absent
  int64_t world_size = 1;
  // The options that fix the math of the run: `binding_config` when written, else `config`
  // less the options that do not (paths, logging, checkpointing, device, threads, ...).
  nlohmann::json config = nlohmann::json::object(), binding_config = nlohmann::json::object();
  bool has_config = false;
};

// Options of `config` that change how a run executes or is reported, not what it computes:
// the option table's rows marked .runtime() (train/train_config.h; records sits below train,
// so the list is written here and tests/train checks it equals the table). Used for
// summaries written without binding_config.
const std::vector<std::string>& non_binding_config_keys();
nlohmann::json derive_binding_config(const nlohmann::json& config);

bool is_run_summary(const nlohmann::json& j);
// `format_required` false accepts an object without "format" (a hand-written summary).
RunSummary run_summary_from_json(const nlohmann::json& j, const std::string& path, bool format_required = true);
RunSummary read_run_summary(const std::string& path, bool format_required = true);

}  // namespace shapelaw::records
