#pragma once
// Decoder-only transformer, nanoGPT-style, in the paper's form (§4.1, C.0.32):
//
//   h_0     = E[x]                                   token embedding, no positional table
//   h'_l    = h_{l-1} + Attn_l(Norm(h_{l-1}))        pre-norm residual blocks, l = 1..D
//   h_l     = h'_l    + MLP_l(Norm(h'_l))
//   logits  = Norm_f(h_D) U^T                        final norm, untied head U by default
//
//   Attn(x) = concat_h softmax(RoPE(q_h) RoPE(k_h)^T / sqrt(d) + causal) v_h  W_o
//   MLP(x)  = W_2 gelu(W_1 x)                    (gelu,   hidden 4W)
//           = W_2 (silu(W_1 x) * W_3 x)          (swiglu, hidden ceil64(8W/3))
//   Norm(x) = (x - mean) / sqrt(var + eps) * g + b   (layernorm)
//           = x / sqrt(mean(x^2) + eps) * g          (rmsnorm)
//
// Parameterizations (--param; model/parameterization.h), relative to a base shape W0 x D0
// where the base lr eta, init sigma, decay lambda and epsilon were tuned:
//   m_w = W / W0,  m_d = D / D0,  alpha = --depth-alpha (CompleteP 1, depth-muP 0.5)
//                      sp                 mup                  completep
//   residual branch    h + F(h)           h + F(h)             h + m_d^-alpha F(h)
//   hidden init std    sigma              sigma / sqrt(m_w)    sigma / sqrt(m_w)
//     residual outs    ... / sqrt(2D)     (none)               (none)         (--resid-init)
//   attention scale    1 / sqrt(d)        1 / d                1 / d          (--attn-scale)
//   logits             h_D U^T            (c / m_w) h_D U^T    (c / m_w) h_D U^T   c = --output-mult
//   AdamW, hidden matrices (qkv, attention out, MLP):
//     lr               eta                eta / m_w            eta / m_w * m_d^(alpha-1)
//     weight decay     lambda             lambda               lambda * m_w
//     eps              eps                eps                  eps / m_w * m_d^-alpha
//   AdamW, block norm gains/shifts and biases (never decayed):
//     lr, eps          eta, eps           eta, eps             eta * m_d^(alpha-1), eps * m_d^-alpha
//   embedding, untied head U, final norm: sigma, eta, lambda (matrices only), eps in every case.
#include <functional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "model/model_config.h"

namespace shapelaw {

// RoPE (Su et al.) on x [B, H, T, d]: pairs (x_i, x_{i+d/2}) rotated by angle(t, i) =
// t * theta^(-2i/d), in the rotate-half form
//   x * [cos, cos] + [x_{d/2..}, x_{..d/2}] * [-sin, sin]
// with the full-width [T, d] tables built from the model's buffers (four tensor ops
// instead of seven). Computed in x's dtype: under bf16 autocast the tables are rounded
// to bf16, as the product is.
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos_full, const torch::Tensor& sin_full);

struct NormImpl : torch::nn::Module {
  NormImpl(int64_t width, bool rms, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  bool rms;
  double eps;
  torch::Tensor gain, shift;  // shift undefined for rmsnorm
};
TORCH_MODULE(Norm);

struct AttentionImpl : torch::nn::Module {
  explicit AttentionImpl(const ModelConfig& c);
  // x [B, T, W]; cos/sin [T, head_dim] rotary tables in rotate-half form ([c, c], [-s, s])
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  int64_t heads, head_dim;
  double scale;  // of the attention logits q k^T
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
};
TORCH_MODULE(Attention);

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x);
  bool swiglu;
  torch::nn::Linear fc{nullptr}, gate{nullptr}, proj{nullptr};  // gate only for swiglu
};
TORCH_MODULE(Mlp);

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(const ModelConfig& c);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);
  double residual_mult;  // h + residual_mult * F(h)
  bool fused;            // block_impl fused (model/fused_block.h)
  Norm norm1{nullptr}, norm2{nullptr};
  Attention attn{nullptr};
  Mlp mlp{nullptr};
};
TORCH_MODULE(Block);

struct TransformerImpl : torch::nn::Module {
  explicit TransformerImpl(const ModelConfig& c);
  // tokens [B, T] (int64, T <= seq_len) -> logits [B, T, V] (the real vocabulary: padding cut)
  torch::Tensor forward(const torch::Tensor& tokens);
  // final-norm hidden states times the logit multiplier [B, T, W] (what the head sees);
  // the head weight [V_padded, W] (the embedding when tied; ModelConfig::vocab_multiple)
  torch::Tensor hidden(const torch::Tensor& tokens);
  const torch::Tensor& head_weight();
  // Every block's output h_1..h_D [B, T, W], then the logits [B, T, V]: what a
  // coordinate check (muP's test of a parameterization) watches during training.
  std::vector<torch::Tensor> activations(const torch::Tensor& tokens);
  // mean next-token cross-entropy (nats/token); targets [B, T] (model/head_loss.h)
  torch::Tensor loss(const torch::Tensor& tokens, const torch::Tensor& targets);
  // Re-draws every weight: hidden matrices N(0, init_std * hidden_init), residual output
  // projections further divided by resid_out_divisor (SP: sqrt(2D)), embedding and head
  // N(0, init_std), norms gain 1 / shift 0, biases 0. Uses torch's default generator
  // (seeded by the caller).
  void reset_parameters();
  // logits [..., V_padded] -> [..., V]: the columns of the padding rows cut (a view)
  torch::Tensor real_vocab(const torch::Tensor& logits) const;

  ModelConfig config;
  double logit_mult;  // logits = logit_mult * h_D U^T
  // Recompute each block in backward instead of keeping its activations (model/recompute.h);
  // only while training with gradients on. Not part of the math: gradients are unchanged.
  bool activation_checkpointing = false;
  torch::nn::Embedding embed{nullptr};
  std::vector<Block> blocks;
  Norm final_norm{nullptr};
  torch::nn::Linear head{nullptr};  // nullptr when tie_embeddings
  torch::Tensor rope_cos, rope_sin;  // buffers [seq_len, head_dim/2]
};
TORCH_MODULE(Transformer);


// Gradient norms per layer and component (after backward, before clipping):
//   layer 0..D-1, component attn | mlp | norm (both pre-norms) | block (all of the block)
//   layer -1 component embedding; layer D components final_norm, head (absent when tied)
// The same computation serves `train --probe-steps` and `probe-grads`.
struct ComponentNorm {
  int layer;
  std::string component;
  double norm;
};
// squared: a parameter's squared gradient norm, where its .grad is not whole (ZeRO's
// slices, train/optimizer.h); by default from .grad.
using GradSquares = std::function<double(const torch::Tensor& param)>;
std::vector<ComponentNorm> component_grad_norms(TransformerImpl& model, const GradSquares& squared = {});

// Parameters actually allocated by a (small) model: checks count_parameters().allocated.
int64_t allocated_parameter_count(const ModelConfig& config);

}  // namespace shapelaw
