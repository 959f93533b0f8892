#pragma once
// The architecture of one decoder-only transformer as far as parameter counting and
// the depth audit need it. Filled from a models CSV row, a Hugging Face config.json,
// or a published table; zero means "not given / use the default" where noted.
#include <cstdint>
#include <string>

namespace shapelaw::audit {

enum class Mlp { gelu, swiglu, geglu };  // gelu: 2 matrices W×F; swiglu/geglu: 3 (gated)
enum class Norm { layernorm, rmsnorm };   // layernorm has weight+bias, rmsnorm weight only

struct Arch {
  std::string name;
  int64_t depth = 0, width = 0;
  int64_t heads = 0;      // 0: unknown (attention counted as 4·W²)
  int64_t kv_heads = 0;   // 0: = heads (multi-head); 1: multi-query; else grouped-query
  int64_t head_dim = 0;   // 0: width / heads
  int64_t ffn = 0;        // 0: default (gelu 4·W; gated round(8·W/3) so 3·W·F ≈ 8·W²)
  int64_t vocab = 0;
  Mlp mlp = Mlp::gelu;
  Norm norm = Norm::layernorm;
  bool tied = false;      // output projection shares the input embedding
  bool biases = false;    // linear layers carry biases (GPT-2/3, OPT, BLOOM)
  bool qkv_bias = false;  // biases on q, k, v only (Qwen2)
  int64_t learned_positions = 0;  // learned absolute position embeddings (rows)
  int64_t norms_per_layer = 2;    // Gemma 2 uses 4
  bool embedding_norm = false;    // LayerNorm after the embedding (BLOOM)
  // Mixture of experts: experts > 0 makes the model MoE.
  int64_t experts = 0, experts_active = 0, shared_experts = 0;
  int64_t moe_ffn = 0;       // per-expert hidden size; 0: = ffn
  int64_t dense_layers = 0;  // leading layers with a dense MLP (DeepSeek first_k_dense_replace)
  // Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank > 0 switches it on.
  int64_t q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;

  bool is_moe() const { return experts > 0; }
  int64_t effective_kv_heads() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t effective_head_dim() const { return head_dim > 0 ? head_dim : (heads > 0 ? width / heads : 0); }
  int64_t effective_ffn() const;
};

const char* to_string(Mlp mlp);
const char* to_string(Norm norm);
bool parse_mlp(const std::string& text, Mlp& out);    // gelu, relu, swiglu, silu, geglu, ...
bool parse_norm(const std::string& text, Norm& out);  // layernorm, rmsnorm

// Structural checks shared by all readers; returns "" when consistent, otherwise the
// name of the field at fault and why (e.g. "width: 1000 is not divisible by heads 24").
std::string validate(const Arch& arch);

}  // namespace shapelaw::audit
