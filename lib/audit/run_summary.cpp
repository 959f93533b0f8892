#include "audit/run_summary.h"

#include <cmath>
#include <filesystem>

#include "util/error.h"

namespace shapelaw::audit {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& field, const std::string& what) {
  throw Error(located(path, 0, "field '" + field + "': " + what));
}

int64_t integer(const nlohmann::json& j, const std::string& path, const char* key, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) fail(path, key, "missing");
    return 0;
  }
  if (it->is_number_integer() || it->is_number_unsigned()) return it->get<int64_t>();
  if (it->is_number_float() && it->get<double>() == std::floor(it->get<double>())) return static_cast<int64_t>(it->get<double>());
  fail(path, key, "expected an integer, got " + it->dump());
}

}  // namespace

bool is_run_summary(const nlohmann::json& j) {
  return j.is_object() && j.contains("format") && j["format"] == "shapelaw.summary";
}

ModelEntry model_from_run_summary(const nlohmann::json& j, const std::string& path) {
  if (j.contains("version") && j["version"].is_number() && j["version"].get<double>() >= 2)
    fail(path, "version", j["version"].dump() + " is newer than this audit understands (1)");
  ModelEntry m;
  m.origin = m.source_arch = m.source_params = path;
  m.kind = "dense";
  m.family = "shapelaw run";
  Arch& a = m.arch;
  a.name = j.contains("run_id") && j["run_id"].is_string()
               ? j["run_id"].get<std::string>()
               : std::filesystem::path(path).parent_path().filename().string();
  a.depth = integer(j, path, "depth", true);
  a.width = integer(j, path, "width", true);
  a.heads = integer(j, path, "heads", false);
  a.head_dim = integer(j, path, "head_dim", false);
  if (a.heads > 0 && a.head_dim * a.heads == a.width) a.head_dim = 0;
  a.vocab = integer(j, path, "vocab_size", true);
  if (j.contains("mlp")) {
    if (!j["mlp"].is_string() || !parse_mlp(j["mlp"].get<std::string>(), a.mlp))
      fail(path, "mlp", "expected \"gelu\" or \"swiglu\", got " + j["mlp"].dump());
  }
  a.norm = Norm::layernorm;
  if (j.contains("norm")) {
    if (!j["norm"].is_string() || !parse_norm(j["norm"].get<std::string>(), a.norm))
      fail(path, "norm", "expected \"layernorm\" or \"rmsnorm\", got " + j["norm"].dump());
  }
  if (j.contains("tie_embeddings")) {
    if (!j["tie_embeddings"].is_boolean()) fail(path, "tie_embeddings", "expected true or false");
    a.tied = j["tie_embeddings"].get<bool>();
  }
  if (j.contains("params") && j["params"].is_object() && j["params"].contains("total")) {
    if (!j["params"]["total"].is_number()) fail(path, "params.total", "expected a number");
    m.stated_params = j["params"]["total"].get<double>();
  }
  std::string why = validate(a);
  if (!why.empty()) {
    size_t colon = why.find(':');
    fail(path, why.substr(0, colon), why.substr(colon + 2));
  }
  return m;
}

}  // namespace shapelaw::audit
