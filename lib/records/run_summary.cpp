#include "records/run_summary.h"

#include <cmath>

#include "records/versioned_json.h"

namespace shapelaw::records {
namespace {

using nlohmann::json;

int64_t integer(const json& j, const std::string& path, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return 0;
  if (it->is_number_integer() || it->is_number_unsigned()) return it->get<int64_t>();
  if (it->is_number_float() && std::isfinite(it->get<double>()) && it->get<double>() == std::floor(it->get<double>()))
    return static_cast<int64_t>(it->get<double>());
  fail_field(path, key, "expected an integer, got " + it->dump());
}

std::string text(const json& j, const std::string& path, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (!it->is_string()) fail_field(path, key, "expected a string, got " + it->dump());
  return it->get<std::string>();
}

}  // namespace

const std::vector<std::string>& non_binding_config_keys() {
  static const std::vector<std::string> keys = {
      "data",           "tokenizer_model",  "out",    "run_id",      "run_group", "val_every",  "log_every",
      "checkpoint_every", "keep_checkpoints", "resume", "probe_steps", "device",    "threads",    "prefetch",
      "peak_flops",     "bucket_mb",        "activation_checkpointing", "divergence_factor", "readout_every",
      "profile_steps", "no_checkpoints"};
  return keys;
}

json derive_binding_config(const json& config) {
  json b = config.is_object() ? config : json::object();
  for (const auto& k : non_binding_config_keys()) b.erase(k);
  return b;
}

bool is_run_summary(const json& j) {
  return j.is_object() && j.contains("format") && j["format"] == kSummaryFormat;
}

RunSummary run_summary_from_json(const json& j, const std::string& path, bool format_required) {
  check_versioned(j, path, kSummaryFormat, kSummaryVersion, format_required);
  RunSummary s;
  s.path = path;
  s.json = j;
  s.run_id = text(j, path, "run_id");
  s.group = text(j, path, "group");
  s.tokenizer_sha256 = text(j, path, "tokenizer_sha256");
  s.tokenizer_kind = text(j, path, "tokenizer_kind");
  s.depth = integer(j, path, "depth");
  s.width = integer(j, path, "width");
  s.heads = integer(j, path, "heads");
  s.head_dim = integer(j, path, "head_dim");
  s.vocab_size = integer(j, path, "vocab_size");
  if (j.contains("world_size")) s.world_size = integer(j, path, "world_size");
  if (j.contains("mlp")) s.mlp = text(j, path, "mlp");
  if (j.contains("norm")) s.norm = text(j, path, "norm");
  if (j.contains("tie_embeddings")) {
    if (!j["tie_embeddings"].is_boolean()) fail_field(path, "tie_embeddings", "expected true or false");
    s.tie_embeddings = j["tie_embeddings"].get<bool>();
  }
  if (j.contains("params") && j["params"].is_object() && j["params"].contains("total")) {
    if (!j["params"]["total"].is_number()) fail_field(path, "params.total", "expected a number");
    s.params_total = j["params"]["total"].get<double>();
  }
  for (const char* key : {"config", "binding_config"})
    if (j.contains(key) && !j[key].is_object()) fail_field(path, key, "expected an object, got " + j[key].dump());
  if (j.contains("config")) {
    s.config = j["config"];
    s.has_config = true;
  }
  if (j.contains("binding_config")) {
    s.binding_config = j["binding_config"];
    s.has_config = true;
  } else {
    s.binding_config = derive_binding_config(s.config);
  }
  return s;
}

RunSummary read_run_summary(const std::string& path, bool format_required) {
  return run_summary_from_json(read_json_object(path), path, format_required);
}

}  // namespace shapelaw::records
