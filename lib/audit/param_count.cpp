#include "audit/param_count.h"

#include <cmath>

namespace shapelaw::audit {
namespace {

int64_t attention_params(const Arch& a) {
  const int64_t W = a.width;
  if (a.kv_lora_rank > 0) {  // multi-head latent attention (DeepSeek-V2/V3)
    const int64_t H = a.heads, qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
    int64_t q = a.q_lora_rank > 0 ? W * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * H * qk : W * H * qk;
    int64_t kv_a = W * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank;
    int64_t kv_b = a.kv_lora_rank * H * (a.qk_nope_head_dim + a.v_head_dim);
    int64_t o = H * a.v_head_dim * W;
    return q + kv_a + kv_b + o;
  }
  if (a.heads <= 0) return 4 * W * W + (a.biases ? 4 * W : 0);
  const int64_t hd = a.effective_head_dim(), H = a.heads, KV = a.effective_kv_heads();
  int64_t p = W * H * hd + 2 * W * KV * hd + H * hd * W;
  if (a.biases) p += H * hd + 2 * KV * hd + W;
  else if (a.qkv_bias) p += H * hd + 2 * KV * hd;
  return p;
}

int64_t mlp_params(const Arch& a, int64_t F) {
  const int64_t W = a.width;
  if (a.mlp == Mlp::gelu) return 2 * W * F + (a.biases ? F + W : 0);
  return 3 * W * F + (a.biases ? 2 * F + W : 0);
}

int64_t norm_params(const Arch& a) { return a.norm == Norm::layernorm ? 2 * a.width : a.width; }

}  // namespace

ParamCount count_params(const Arch& a) {
  ParamCount c;
  const int64_t W = a.width;
  c.paper_12DW2 = paper_12DW2(a.depth, W);
  c.embedding = a.vocab * W * (a.tied ? 1 : 2) + a.learned_positions * W;
  const int64_t attn = attention_params(a), norms = a.norms_per_layer * norm_params(a);
  const int64_t dense_mlp = mlp_params(a, a.effective_ffn());
  int64_t all = 0, active = 0;
  for (int64_t layer = 0; layer < a.depth; ++layer) {
    int64_t base = attn + norms;
    if (!a.is_moe() || layer < a.dense_layers) {
      all += base + dense_mlp;
      active += base + dense_mlp;
      continue;
    }
    const int64_t expert = mlp_params(a, a.moe_ffn > 0 ? a.moe_ffn : a.effective_ffn());
    const int64_t router = W * a.experts;
    all += base + (a.experts + a.shared_experts) * expert + router;
    active += base + (a.experts_active + a.shared_experts) * expert + router;
  }
  int64_t extra = norm_params(a) + (a.embedding_norm ? 2 * W : 0);  // final norm (+ embedding LayerNorm)
  c.non_embedding = all + extra;
  c.active_non_embedding = active + extra;
  c.total = c.embedding + c.non_embedding;
  c.active_total = c.embedding + c.active_non_embedding;
  return c;
}

double implied_width(const Arch& arch, double target) {
  auto total_at = [&](double w) {
    // Continuous extension: evaluate at the two neighbouring integer widths and interpolate.
    auto at = [&](int64_t wi) {
      Arch a = arch;
      double scale = static_cast<double>(wi) / static_cast<double>(arch.width);
      a.width = wi;
      if (arch.ffn > 0) a.ffn = static_cast<int64_t>(std::llround(arch.ffn * scale));
      if (arch.moe_ffn > 0) a.moe_ffn = static_cast<int64_t>(std::llround(arch.moe_ffn * scale));
      if (arch.heads > 0 && arch.head_dim == 0) {
        a.head_dim = 0;
        a.heads = 0;  // attention as 4·W² (+ biases) when heads do not divide a scaled width
      }
      return static_cast<double>(count_params(a).total);
    };
    int64_t lo = static_cast<int64_t>(std::floor(w));
    double f = w - static_cast<double>(lo);
    return (1 - f) * at(lo) + f * at(lo + 1);
  };
  double lo = 1, hi = 1e7;
  if (total_at(lo) > target || total_at(hi) < target) return 0;
  for (int it = 0; it < 100 && hi - lo > 1e-3; ++it) {
    double mid = 0.5 * (lo + hi);
    (total_at(mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace shapelaw::audit
