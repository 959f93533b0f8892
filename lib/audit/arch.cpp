#include "audit/arch.h"

#include <cmath>

#include "audit/numbers.h"

namespace shapelaw::audit {

int64_t Arch::effective_ffn() const {
  if (ffn > 0) return ffn;
  if (mlp == Mlp::gelu) return 4 * width;
  return static_cast<int64_t>(std::llround(8.0 * static_cast<double>(width) / 3.0));
}

const char* to_string(Mlp mlp) {
  switch (mlp) {
    case Mlp::gelu: return "gelu";
    case Mlp::swiglu: return "swiglu";
    case Mlp::geglu: return "geglu";
  }
  return "?";
}

const char* to_string(Norm norm) { return norm == Norm::layernorm ? "layernorm" : "rmsnorm"; }

bool parse_mlp(const std::string& text, Mlp& out) {
  std::string t = lower(trim(text));
  if (t == "gelu" || t == "relu" || t == "gelu_new" || t == "gelu_fast" || t == "gelu_pytorch_tanh" ||
      t == "4w" || t == "mlp" || t == "plain")
    return out = Mlp::gelu, true;
  if (t == "swiglu" || t == "silu" || t == "swish" || t == "gated-silu") return out = Mlp::swiglu, true;
  if (t == "geglu" || t == "gated-gelu") return out = Mlp::geglu, true;
  return false;
}

bool parse_norm(const std::string& text, Norm& out) {
  std::string t = lower(trim(text));
  if (t == "layernorm" || t == "ln" || t == "layer_norm") return out = Norm::layernorm, true;
  if (t == "rmsnorm" || t == "rms" || t == "rms_norm") return out = Norm::rmsnorm, true;
  return false;
}

std::string validate(const Arch& a) {
  auto s = [](int64_t v) { return std::to_string(v); };
  if (a.depth <= 0) return "depth: must be a positive integer, got " + s(a.depth);
  if (a.width <= 0) return "width: must be a positive integer, got " + s(a.width);
  if (a.heads < 0) return "heads: must not be negative";
  if (a.heads > 0 && a.head_dim == 0 && a.width % a.heads != 0)
    return "width: " + s(a.width) + " is not divisible by heads " + s(a.heads) + " (give head_dim if intended)";
  if (a.kv_heads < 0) return "kv_heads: must not be negative";
  if (a.kv_heads > 0 && a.heads > 0 && a.heads % a.kv_heads != 0)
    return "kv_heads: heads " + s(a.heads) + " is not a multiple of kv_heads " + s(a.kv_heads);
  if (a.kv_heads > 0 && a.heads == 0) return "kv_heads: given without heads";
  if (a.vocab < 0) return "vocab: must not be negative";
  if (a.ffn < 0) return "ffn: must not be negative";
  if (a.experts < 0 || a.experts_active < 0 || a.shared_experts < 0) return "experts: must not be negative";
  if (a.experts > 0 && (a.experts_active <= 0 || a.experts_active > a.experts))
    return "experts_active: must be between 1 and experts (" + s(a.experts) + "), got " + s(a.experts_active);
  if (a.dense_layers < 0 || a.dense_layers > a.depth)
    return "dense_layers: must be between 0 and depth (" + s(a.depth) + ")";
  if (a.kv_lora_rank > 0 && (a.heads <= 0 || a.qk_nope_head_dim + a.qk_rope_head_dim <= 0 || a.v_head_dim <= 0))
    return "kv_lora_rank: latent attention needs heads, qk_nope_head_dim/qk_rope_head_dim and v_head_dim";
  return "";
}

}  // namespace shapelaw::audit
