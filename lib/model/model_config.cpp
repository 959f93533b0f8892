#include "model/model_config.h"

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
  if (seq_len < 1) fail("seq_len must be >= 1");
  if (mlp != "gelu" && mlp != "swiglu") fail("mlp must be gelu or swiglu (got '" + mlp + "')");
  if (norm != "layernorm" && norm != "rmsnorm")
    fail("norm must be layernorm or rmsnorm (got '" + norm + "')");
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
  return p;
}

double flops_per_token(const ModelConfig& c) {
  ParamCounts p = count_parameters(c);
  double matmul_params = double(p.non_embedding) + double(c.vocab_size) * c.width;
  return 6.0 * matmul_params + 12.0 * c.depth * double(c.width) * c.seq_len;
}

nlohmann::json to_json(const ModelConfig& c) {
  return {{"depth", c.depth},       {"width", c.width},         {"head_dim", c.head_dim},
          {"heads", c.heads()},     {"vocab_size", c.vocab_size}, {"seq_len", c.seq_len},
          {"mlp", c.mlp},           {"mlp_hidden", c.mlp_hidden()}, {"norm", c.norm},
          {"tie_embeddings", c.tie_embeddings}, {"bias", c.bias},
          {"rope_theta", c.rope_theta}, {"init_std", c.init_std}, {"norm_eps", c.norm_eps}};
}

ModelConfig model_config_from_json(const nlohmann::json& j) {
  ModelConfig c;
  c.depth = j.value("depth", c.depth);
  c.width = j.value("width", c.width);
  c.head_dim = j.value("head_dim", c.head_dim);
  c.vocab_size = j.value("vocab_size", c.vocab_size);
  c.seq_len = j.value("seq_len", c.seq_len);
  c.mlp = j.value("mlp", c.mlp);
  c.norm = j.value("norm", c.norm);
  c.tie_embeddings = j.value("tie_embeddings", c.tie_embeddings);
  c.bias = j.value("bias", c.bias);
  c.rope_theta = j.value("rope_theta", c.rope_theta);
  c.init_std = j.value("init_std", c.init_std);
  c.norm_eps = j.value("norm_eps", c.norm_eps);
  return c;
}

}  // namespace shapelaw
