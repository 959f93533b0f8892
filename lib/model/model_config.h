#pragma once
// Shape of the decoder-only transformer (paper §4.1, appendix B and C.0.32) and the
// analytic bookkeeping every later stage needs: parameter counts and training FLOPs
// per token. Torch-free on purpose: tools and tests can count a 7B model without
// allocating it.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "util/option_table.h"

namespace shapelaw {

struct ModelConfig {
  int depth = 2;            // D: number of transformer blocks
  int width = 128;          // W: residual stream width (d_model)
  int head_dim = 64;        // heads = W / head_dim
  int64_t vocab_size = 50257;
  // The embedding and the output head get padded_vocab() rows, the rows past vocab_size
  // never read (no token has their id) and cut from the logits before the loss, so the
  // loss, the gradients of the real rows, the parameter counts and the FLOPs are those of
  // vocab_size: 64 turns GPT-2's 50257 into 50304, whole tensor-core tiles in the head's
  // matmuls (nanoGPT's and llm.c's padding). 1: no padding.
  int vocab_multiple = 1;
  int seq_len = 1024;       // context length (RoPE tables are built for it)
  std::string mlp = "gelu";        // gelu: W->4W->W | swiglu: W->H (x2, gated) ->W, H=ceil64(8W/3)
  std::string norm = "layernorm";  // layernorm (weight+bias) | rmsnorm (weight only)
  bool tie_embeddings = false;     // paper's counts (Table 9) imply untied
  bool bias = false;               // biases in the Linear layers
  double rope_theta = 10000.0;
  double init_std = 0.02;          // N(0, 0.02); residual projections get 0.02/sqrt(2D)
  double norm_eps = 1e-5;
  // parameterization (lib/model/parameterization.h; equations in model/model.h)
  std::string param = "sp";        // sp | mup | completep
  int base_width = 0;              // W0 of the multipliers (0: this width, m_w = 1)
  int base_depth = 0;              // D0 (0: this depth, m_d = 1)
  double depth_alpha = 1.0;        // completep's residual exponent: 1 CompleteP, 0.5 depth-muP
  double output_mult = 1.0;        // mup/completep logits: output_mult / m_w * h U^T
  std::string attn_scale = "auto";  // auto (sp: 1/sqrt(d), else 1/d) | inv-sqrt | inv
  std::string resid_init = "auto";  // auto (sp: sigma/sqrt(2D) on residual outputs, else none) | depth | none
  std::string eps_scope = "blocks";  // mup/completep AdamW eps scaled in: blocks (the paper's Table 1) | all (nanoGPT-mup)
  // How the model is computed, not what: aten (one autograd op per tensor op) | fused (one
  // node per block, model/fused_block.h, and at small widths the output head in one pass,
  // model/head_loss.h; equal to aten up to float rounding). Binding, since the rounding
  // differs; written to JSON only when not aten, so the records of runs made before it
  // existed, and of every aten run, are unchanged.
  std::string block_impl = "aten";

  int heads() const { return width / head_dim; }
  int64_t padded_vocab() const { return (vocab_size + vocab_multiple - 1) / vocab_multiple * vocab_multiple; }
  int64_t mlp_hidden() const;  // 4W (gelu) or 8W/3 rounded up to a multiple of 64 (swiglu)
  void validate() const;       // throws Error with a clear message
};

struct ParamCounts {
  int64_t total = 0;          // every trainable parameter, tied weights counted once
  int64_t embedding = 0;      // token embedding + output head (unless tied)
  int64_t non_embedding = 0;  // total - embedding: blocks + final norm (Kaplan's N)
  int64_t paper_12DW2 = 0;    // 12 * D * W^2, the paper's N
  int64_t allocated = 0;      // total + the padding rows (ModelConfig::vocab_multiple): what memory holds
};

ParamCounts count_parameters(const ModelConfig& config);

// Training FLOPs per token (forward + backward = 3 x forward), PaLM-style accounting:
//   6 * (N_non_embedding + V*W)      every weight matmul, output head included
//                                     (the input embedding is a lookup: 0 FLOPs)
// + 12 * D * W * seq_len             attention scores QK^T and A.V (no causal discount)
double flops_per_token(const ModelConfig& config);

// Rows per chunk of the chunked head loss off the CPU (model/head_loss.h), here for the
// memory plan too: a chunk's fp32 logits at most 2^26 elements (256 MiB), a multiple of 64.
int64_t head_chunk_rows(int64_t vocab);

// The option rows of a ModelConfig (util/option_table.h): every field is binding.
template <class Config, class F>  // Config: ModelConfig or const ModelConfig
void visit_model_options(Config& c, F&& f) {
  f(OptionInfo{"depth", "--depth", "D: transformer blocks"}, c.depth);
  f(OptionInfo{"width", "--width", "W: model width"}, c.width);
  f(OptionInfo{"head_dim", "--head-dim", "head dimension (heads = W / head_dim)"}, c.head_dim);
  f(OptionInfo{"vocab_size", "--vocab-size", "vocabulary (0: from the manifest)"}, c.vocab_size);
  f(OptionInfo{"vocab_multiple", "--vocab-multiple",
               "pad the embedding and head to a multiple of this (64: 50257 -> 50304, whole GPU tiles); the loss, "
               "parameter counts and FLOPs stay the real vocabulary's"},
    c.vocab_multiple);
  f(OptionInfo{"seq_len", "--seq-len", "sequence length"}, c.seq_len);
  f(OptionInfo{"mlp", "--mlp", "gelu (4W) | swiglu (8W/3 rounded up to 64)"}, c.mlp);
  f(OptionInfo{"norm", "--norm", "layernorm | rmsnorm (pre-norm)"}, c.norm);
  f(OptionInfo{"tie_embeddings", "--tie-embeddings,!--untie-embeddings", "share input and output embeddings"}.no_default(),
    c.tie_embeddings);
  f(OptionInfo{"bias", "--bias,!--no-bias", "biases in the Linear layers"}.no_default(), c.bias);
  f(OptionInfo{"rope_theta", "--rope-theta", "RoPE base"}, c.rope_theta);
  f(OptionInfo{"init_std", "--init-std", "init std sigma (see --param, --resid-init)"}.sweepable(), c.init_std);
  f(OptionInfo{"norm_eps", "", ""}.no_default(), c.norm_eps);
  f(OptionInfo{"param", "--param", "parameterization: sp | mup (width) | completep (width and depth)"},
    c.param);
  f(OptionInfo{"base_width", "--base-width", "W0, the width the base LR/init were tuned at (0: this width)"},
    c.base_width);
  f(OptionInfo{"base_depth", "--base-depth", "D0, the depth the base LR/init were tuned at (0: this depth)"},
    c.base_depth);
  f(OptionInfo{"depth_alpha", "--depth-alpha", "completep residual branch multiplier (D/D0)^-alpha: 1 CompleteP, 0.5 depth-muP"},
    c.depth_alpha);
  f(OptionInfo{"output_mult", "--output-mult", "mup/completep logit multiplier numerator (logits * output_mult / m_w)"},
    c.output_mult);
  f(OptionInfo{"attn_scale", "--attn-scale", "attention logits scale: auto (sp 1/sqrt(d), mup/completep 1/d) | inv-sqrt | inv"},
    c.attn_scale);
  f(OptionInfo{"resid_init", "--resid-init",
               "residual-projection init: auto (sp: sigma/sqrt(2D); mup/completep: none) | depth (/sqrt(2D)) | none"},
    c.resid_init);
  f(OptionInfo{"eps_scope", "--eps-scope",
               "mup/completep: AdamW eps scaled (1/m_w, m_d^-alpha) in the residual blocks only (blocks: the paper's "
               "Table 1) or in every tensor (all: the nanoGPT-mup code's one global eps)"},
    c.eps_scope);
  f(OptionInfo{"block_impl", "--block-impl",
               "aten | fused (each block one autograd node, CPU float32: faster at small widths, equal up to rounding)"},
    c.block_impl);
}

nlohmann::json to_json(const ModelConfig& config);
ModelConfig model_config_from_json(const nlohmann::json& j);

}  // namespace shapelaw
