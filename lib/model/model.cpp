#include "model/model.h"

#include <cmath>

#include "model/fused_block.h"
#include "model/grad_norm.h"
#include "model/head_loss.h"
#include "model/parameterization.h"
#include "model/recompute.h"
#include "compat/torch_compat.h"

namespace shapelaw {
namespace {

torch::nn::Linear linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// Rotary tables: angle(t, i) = t * theta^(-2i/d), i < d/2 (Su et al.).
std::pair<torch::Tensor, torch::Tensor> rope_tables(int64_t seq, int64_t d, double theta) {
  auto i = torch::arange(0, d / 2, torch::kFloat64);
  auto inv_freq = torch::pow(theta, -2.0 * i / double(d));
  auto t = torch::arange(0, seq, torch::kFloat64);
  auto angles = torch::outer(t, inv_freq);
  return {angles.cos().to(torch::kFloat32), angles.sin().to(torch::kFloat32)};
}

}  // namespace

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos_full, const torch::Tensor& sin_full) {
  const int64_t half = x.size(-1) / 2;
  auto rotated = torch::cat({x.slice(-1, half), x.slice(-1, 0, half)}, -1);
  // the tables in x's dtype: fp32 tables would promote a bf16 product to fp32, twice the
  // bytes of q and k in each of the four passes (fp32 x: the same tensors, no copy)
  const torch::Tensor c = cos_full.to(x.scalar_type()), s = sin_full.to(x.scalar_type());
  return x * c + rotated * s;
}

namespace {

// [T, d] tables for apply_rope from the [seq_len, d/2] buffers.
std::pair<torch::Tensor, torch::Tensor> rope_full_tables(const torch::Tensor& cos, const torch::Tensor& sin,
                                                         int64_t T) {
  auto c = cos.slice(0, 0, T), s = sin.slice(0, 0, T);
  return {torch::cat({c, c}, -1), torch::cat({-s, s}, -1)};
}

double squared_grad_norm(const std::vector<torch::Tensor>& params, const GradSquares& squared) {
  if (squared) {
    double sum = 0;
    for (auto& p : params) sum += squared(p);
    return sum;
  }
  std::vector<torch::Tensor> grads;
  for (auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad().detach());
  if (grads.empty()) return 0.0;
  return squared_norms(grads, /*foreach=*/false).sum().item<double>();
}

}  // namespace

NormImpl::NormImpl(int64_t width, bool rms_, double eps_) : rms(rms_), eps(eps_) {
  gain = register_parameter("gain", torch::ones({width}));
  if (!rms) shift = register_parameter("shift", torch::zeros({width}));
}

torch::Tensor NormImpl::forward(const torch::Tensor& x) {
  if (!rms) return torch::layer_norm(x, {x.size(-1)}, gain, shift, eps);
  auto xf = x.to(torch::kFloat32);
  auto y = xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return (y * gain).to(x.scalar_type());
}

AttentionImpl::AttentionImpl(const ModelConfig& c)
    : heads(c.heads()), head_dim(c.head_dim), scale(parameterization_multipliers(c).attn_scale) {
  qkv = register_module("qkv", linear(c.width, 3 * c.width, c.bias));
  proj = register_module("proj", linear(c.width, c.width, c.bias));
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                     const torch::Tensor& sin) {
  const int64_t B = x.size(0), T = x.size(1), W = x.size(2);
  auto qkv_out = qkv(x).view({B, T, 3, heads, head_dim}).permute({2, 0, 3, 1, 4});  // 3,B,H,T,d
  auto q = apply_rope(qkv_out[0], cos, sin);
  auto k = apply_rope(qkv_out[1], cos, sin);
  auto y = compat::causal_attention(q, k, qkv_out[2], scale);  // B,H,T,d
  return proj(y.transpose(1, 2).reshape({B, T, W}));
}

MlpImpl::MlpImpl(const ModelConfig& c) : swiglu(c.mlp == "swiglu") {
  const int64_t hidden = c.mlp_hidden();
  fc = register_module("fc", linear(c.width, hidden, c.bias));
  if (swiglu) gate = register_module("gate", linear(c.width, hidden, c.bias));
  proj = register_module("proj", linear(hidden, c.width, c.bias));
}

torch::Tensor MlpImpl::forward(const torch::Tensor& x) {
  if (swiglu) return proj(torch::silu(gate(x)) * fc(x));
  return proj(torch::gelu(fc(x)));
}

BlockImpl::BlockImpl(const ModelConfig& c)
    : residual_mult(parameterization_multipliers(c).residual), fused(c.block_impl == "fused") {
  const bool rms = c.norm == "rmsnorm";
  norm1 = register_module("norm1", Norm(c.width, rms, c.norm_eps));
  attn = register_module("attn", Attention(c));
  norm2 = register_module("norm2", Norm(c.width, rms, c.norm_eps));
  mlp = register_module("mlp", Mlp(c));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin) {
  if (fused && fused_block_applies(x)) return fused_block(*this, x, cos, sin);
  if (residual_mult == 1.0) {  // SP and muP: no multiply pass
    auto h = x + attn(norm1(x), cos, sin);
    return h + mlp(norm2(h));
  }
  auto h = x + residual_mult * attn(norm1(x), cos, sin);
  return h + residual_mult * mlp(norm2(h));
}

TransformerImpl::TransformerImpl(const ModelConfig& c) : config(c) {
  c.validate();
  logit_mult = parameterization_multipliers(c).logit;
  embed = register_module("embed", torch::nn::Embedding(c.vocab_size, c.width));
  for (int l = 0; l < c.depth; ++l)
    blocks.push_back(register_module("block" + std::to_string(l), Block(c)));
  final_norm = register_module("final_norm", Norm(c.width, c.norm == "rmsnorm", c.norm_eps));
  if (!c.tie_embeddings) head = register_module("head", linear(c.width, c.vocab_size, false));
  // The padding rows come after the modules are made as unpadded ones: their default
  // initialization draws what an unpadded model's does, so reset_parameters' stream, and
  // every real weight, are the same with padding and without.
  if (c.padded_vocab() != c.vocab_size) {
    const auto padded = [&] { return torch::zeros({c.padded_vocab(), int64_t(c.width)}); };
    embed->weight.set_data(padded());
    if (head) head->weight.set_data(padded());
  }
  auto [cos, sin] = rope_tables(c.seq_len, c.head_dim, c.rope_theta);
  rope_cos = register_buffer("rope_cos", cos);
  rope_sin = register_buffer("rope_sin", sin);
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  const Multipliers m = parameterization_multipliers(config);
  const double std = config.init_std, hidden_std = std * m.hidden_init, residual_std = hidden_std / m.resid_out_divisor;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    auto& p = item.value();
    auto ends_with = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends_with(".gain")) p.fill_(1.0);
    else if (ends_with(".shift") || ends_with(".bias")) p.zero_();
    else if (ends_with("proj.weight")) p.normal_(0.0, residual_std);  // attn.proj, mlp.proj
    else if (name.rfind("block", 0) == 0) p.normal_(0.0, hidden_std);   // qkv, fc, gate
    else {  // embedding, head: the real rows drawn as unpadded (the same random stream), padding 0
      p.narrow(0, 0, config.vocab_size).normal_(0.0, std);
      p.narrow(0, config.vocab_size, p.size(0) - config.vocab_size).zero_();
    }
  }
}

torch::Tensor TransformerImpl::hidden(const torch::Tensor& tokens) {
  TORCH_CHECK(tokens.size(1) <= config.seq_len, "sequence longer than seq_len");
  auto h = embed(tokens);
  const auto [cos_full, sin_full] = rope_full_tables(rope_cos, rope_sin, tokens.size(1));
  const bool recompute = activation_checkpointing && is_training() && torch::GradMode::is_enabled();
  for (auto& block : blocks) h = recompute ? recomputed_block(*block, h, cos_full, sin_full) : block(h, cos_full, sin_full);
  h = final_norm(h);
  return logit_mult == 1.0 ? h : h * logit_mult;  // the logit multiplier, applied before the head
}

std::vector<torch::Tensor> TransformerImpl::activations(const torch::Tensor& tokens) {
  std::vector<torch::Tensor> out;
  auto h = embed(tokens);
  const auto [cos_full, sin_full] = rope_full_tables(rope_cos, rope_sin, tokens.size(1));
  for (auto& block : blocks) out.push_back(h = block(h, cos_full, sin_full));
  h = final_norm(h);
  out.push_back(real_vocab(torch::matmul(logit_mult == 1.0 ? h : h * logit_mult, head_weight().t())));
  return out;
}

const torch::Tensor& TransformerImpl::head_weight() { return head ? head->weight : embed->weight; }

torch::Tensor TransformerImpl::real_vocab(const torch::Tensor& logits) const {
  return logits.size(-1) == config.vocab_size ? logits : logits.narrow(-1, 0, config.vocab_size);
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens) {
  return real_vocab(torch::matmul(hidden(tokens), head_weight().t()));
}

torch::Tensor TransformerImpl::loss(const torch::Tensor& tokens, const torch::Tensor& targets) {
  auto h = hidden(tokens);
  return head_cross_entropy(h.reshape({-1, h.size(-1)}), head_weight(), targets.reshape({-1}),
                            /*small_width=*/config.block_impl == "fused", config.vocab_size);
}

std::vector<ComponentNorm> component_grad_norms(TransformerImpl& model, const GradSquares& squared) {
  std::vector<ComponentNorm> rows;
  rows.push_back({-1, "embedding", std::sqrt(squared_grad_norm(model.embed->parameters(), squared))});
  for (size_t l = 0; l < model.blocks.size(); ++l) {
    auto& b = model.blocks[l];
    double attn = squared_grad_norm(b->attn->parameters(), squared);
    double mlp = squared_grad_norm(b->mlp->parameters(), squared);
    auto norm_params = b->norm1->parameters();
    for (auto& p : b->norm2->parameters()) norm_params.push_back(p);
    double norm = squared_grad_norm(norm_params, squared);
    int layer = int(l);
    rows.push_back({layer, "attn", std::sqrt(attn)});
    rows.push_back({layer, "mlp", std::sqrt(mlp)});
    rows.push_back({layer, "norm", std::sqrt(norm)});
    rows.push_back({layer, "block", std::sqrt(attn + mlp + norm)});
  }
  const int D = int(model.blocks.size());
  rows.push_back({D, "final_norm", std::sqrt(squared_grad_norm(model.final_norm->parameters(), squared))});
  if (model.head) rows.push_back({D, "head", std::sqrt(squared_grad_norm(model.head->parameters(), squared))});
  return rows;
}

int64_t allocated_parameter_count(const ModelConfig& config) {
  Transformer model(config);
  int64_t n = 0;
  for (auto& p : model->parameters()) n += p.numel();
  return n;
}

}  // namespace shapelaw
