#include "audit/run_summary.h"

#include <filesystem>

#include "records/versioned_json.h"

namespace shapelaw::audit {
ModelEntry model_from_run_summary(const nlohmann::json& j, const std::string& path) {
  using records::fail_field;
  const records::RunSummary s = records::run_summary_from_json(j, path);
  auto require = [&](const char* key, int64_t v) {
    if (v <= 0) fail_field(path, key, "missing");
    return v;
  };
  ModelEntry m;
  m.origin = m.source_arch = m.source_params = path;
  m.kind = "dense";
  m.family = "shapelaw run";
  Arch& a = m.arch;
  a.name = !s.run_id.empty() ? s.run_id : std::filesystem::path(path).parent_path().filename().string();
  a.depth = require("depth", s.depth);
  a.width = require("width", s.width);
  a.heads = s.heads;
  a.head_dim = s.head_dim;
  if (a.heads > 0 && a.head_dim * a.heads == a.width) a.head_dim = 0;
  a.vocab = require("vocab_size", s.vocab_size);
  if (s.mlp && !parse_mlp(*s.mlp, a.mlp)) fail_field(path, "mlp", "expected \"gelu\" or \"swiglu\", got \"" + *s.mlp + "\"");
  a.norm = Norm::layernorm;
  if (s.norm && !parse_norm(*s.norm, a.norm))
    fail_field(path, "norm", "expected \"layernorm\" or \"rmsnorm\", got \"" + *s.norm + "\"");
  if (s.tie_embeddings) a.tied = *s.tie_embeddings;
  if (s.params_total > 0) m.stated_params = s.params_total;
  std::string why = validate(a);
  if (!why.empty()) {
    size_t colon = why.find(':');
    fail_field(path, why.substr(0, colon), why.substr(colon + 2));
  }
  return m;
}

}  // namespace shapelaw::audit
