#pragma once
// Shape of the decoder-only transformer (paper §4.1, appendix B and C.0.32) and the
// analytic bookkeeping every later stage needs: parameter counts and training FLOPs
// per token. Torch-free on purpose: tools and tests can count a 7B model without
// allocating it.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace shapelaw {

struct ModelConfig {
  int depth = 2;            // D: number of transformer blocks
  int width = 128;          // W: residual stream width (d_model)
  int head_dim = 64;        // heads = W / head_dim
  int64_t vocab_size = 50257;
  int seq_len = 1024;       // context length (RoPE tables are built for it)
  std::string mlp = "gelu";        // gelu: W->4W->W | swiglu: W->H (x2, gated) ->W, H=ceil64(8W/3)
  std::string norm = "layernorm";  // layernorm (weight+bias) | rmsnorm (weight only)
  bool tie_embeddings = false;     // paper's counts (Table 9) imply untied
  bool bias = false;               // biases in the Linear layers
  double rope_theta = 10000.0;
  double init_std = 0.02;          // N(0, 0.02); residual projections get 0.02/sqrt(2D)
  double norm_eps = 1e-5;

  int heads() const { return width / head_dim; }
  int64_t mlp_hidden() const;  // 4W (gelu) or 8W/3 rounded up to a multiple of 64 (swiglu)
  void validate() const;       // throws Error with a clear message
};

struct ParamCounts {
  int64_t total = 0;          // every trainable parameter, tied weights counted once
  int64_t embedding = 0;      // token embedding + output head (unless tied)
  int64_t non_embedding = 0;  // total - embedding: blocks + final norm (Kaplan's N)
  int64_t paper_12DW2 = 0;    // 12 * D * W^2, the paper's N
};

ParamCounts count_parameters(const ModelConfig& config);

// Training FLOPs per token (forward + backward = 3 x forward), PaLM-style accounting:
//   6 * (N_non_embedding + V*W)      every weight matmul, output head included
//                                     (the input embedding is a lookup: 0 FLOPs)
// + 12 * D * W * seq_len             attention scores QK^T and A.V (no causal discount)
double flops_per_token(const ModelConfig& config);

nlohmann::json to_json(const ModelConfig& config);
ModelConfig model_config_from_json(const nlohmann::json& j);

}  // namespace shapelaw
