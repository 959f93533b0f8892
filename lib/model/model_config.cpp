#include "model/model_config.h"

#include <algorithm>

#include "util/error.h"

namespace shapelaw {

int64_t ModelConfig::mlp_hidden() const {
  if (mlp == "swiglu") {
    int64_t h = (8 * int64_t(width) + 2) / 3;  // ceil(8W/3)
    return (h + 63) / 64 * 64;                 // rounded up to a multiple of 64
  }
  return 4 * int64_t(width);
}

void ModelConfig::validate() const {
  auto fail = [](const std::string& m) { throw Error("model config: " + m); };
  if (depth < 1) fail("depth must be >= 1 (got " + std::to_string(depth) + ")");
  if (width < 2) fail("width must be >= 2 (got " + std::to_string(width) + ")");
  if (head_dim < 2 || head_dim % 2 != 0)
    fail("head_dim must be even and >= 2 for RoPE (got " + std::to_string(head_dim) + ")");
  if (width % head_dim != 0)
    fail("head_dim " + std::to_string(head_dim) + " must divide width " + std::to_string(width));
  if (vocab_size < 2) fail("vocab_size must be >= 2");
  if (vocab_multiple < 1 || vocab_multiple > 4096)
    fail("--vocab-multiple must be in [1, 4096] (got " + std::to_string(vocab_multiple) + ")");
  if (seq_len < 1) fail("seq_len must be >= 1");
  if (mlp != "gelu" && mlp != "swiglu") fail("mlp must be gelu or swiglu (got '" + mlp + "')");
  if (norm != "layernorm" && norm != "rmsnorm")
    fail("norm must be layernorm or rmsnorm (got '" + norm + "')");
  if (param != "sp" && param != "mup" && param != "completep")
    fail("param must be sp, mup or completep (got '" + param + "')");
  if (base_width < 0 || base_depth < 0) fail("--base-width and --base-depth must be >= 0 (0: this shape)");
  if (!(depth_alpha >= 0 && depth_alpha <= 2)) fail("--depth-alpha must be in [0, 2]");
  if (!(output_mult > 0)) fail("--output-mult must be > 0");
  if (attn_scale != "auto" && attn_scale != "inv-sqrt" && attn_scale != "inv")
    fail("attn_scale must be auto, inv-sqrt or inv (got '" + attn_scale + "')");
  if (resid_init != "auto" && resid_init != "depth" && resid_init != "none")
    fail("resid_init must be auto, depth or none (got '" + resid_init + "')");
  if (eps_scope != "blocks" && eps_scope != "all")
    fail("eps_scope must be blocks or all (got '" + eps_scope + "')");
  if (block_impl != "aten" && block_impl != "fused")
    fail("block_impl must be aten or fused (got '" + block_impl + "')");
}

ParamCounts count_parameters(const ModelConfig& c) {
  const int64_t W = c.width, V = c.vocab_size, D = c.depth, H = c.mlp_hidden();
  const int64_t norm = c.norm == "layernorm" ? 2 * W : W;  // gain (+ bias)
  const int64_t b = c.bias ? 1 : 0;
  int64_t attn = 3 * W * W + b * 3 * W   // q, k, v
               + W * W + b * W;          // output projection
  int64_t mlp = c.mlp == "swiglu" ? 3 * W * H + b * (2 * H + W)
                                  : 2 * W * H + b * (H + W);
  int64_t block = 2 * norm + attn + mlp;
  ParamCounts p;
  p.embedding = V * W + (c.tie_embeddings ? 0 : V * W);
  p.non_embedding = D * block + norm;  // + final norm
  p.total = p.embedding + p.non_embedding;
  p.paper_12DW2 = 12 * D * W * W;
  p.allocated = p.total + (c.padded_vocab() - V) * W * (c.tie_embeddings ? 1 : 2);
  return p;
}

double flops_per_token(const ModelConfig& c) {
  ParamCounts p = count_parameters(c);
  double matmul_params = double(p.non_embedding) + double(c.vocab_size) * c.width;
  return 6.0 * matmul_params + 12.0 * c.depth * double(c.width) * c.seq_len;
}

int64_t head_chunk_rows(int64_t vocab) {
  return std::max<int64_t>(64, (int64_t(1) << 26) / std::max<int64_t>(1, vocab) / 64 * 64);
}

nlohmann::json to_json(const ModelConfig& c) {
  nlohmann::json j = options_to_json(c, [](auto& m, auto&& f) { visit_model_options(m, f); },
                                     [](const OptionInfo&) { return true; });
  if (c.block_impl == "aten") j.erase("block_impl");
  if (c.vocab_multiple == 1) j.erase("vocab_multiple");
  if (c.eps_scope == "blocks") j.erase("eps_scope");  // the default: records made before the switch stay as they were
  j["heads"] = c.heads();  // derived, for readers; ignored when read back
  j["mlp_hidden"] = c.mlp_hidden();
  return j;
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  ModelConfig c;
  // lenient: a model object from summary.json carries derived keys (heads, mlp_hidden),
  // and older files lack the parameterization keys (defaults: sp).
  visit_model_options(c, [&](const OptionInfo& o, auto& member) {
    if (!j.contains(o.key)) return;
    try {
      member = j.at(o.key).template get<std::remove_reference_t<decltype(member)>>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(std::string("model config: key '") + o.key + "': " + e.what());
    }
  });
  return c;
}

}  // namespace shapelaw
