#include "model/parameterization.h"

#include <cmath>

namespace shapelaw {

Multipliers parameterization_multipliers(const ModelConfig& c) {
  Multipliers m;
  const bool mup = c.param == "mup", completep = c.param == "completep";
  m.m_w = c.base_width > 0 ? double(c.width) / double(c.base_width) : 1.0;
  m.m_d = c.base_depth > 0 ? double(c.depth) / double(c.base_depth) : 1.0;
  // Attention logits: 1/d keeps q.k of order 1 when q and k become correlated in training
  // (muP); SP's 1/sqrt(d) assumes they stay independent.
  const bool inv = c.attn_scale == "inv" || (c.attn_scale == "auto" && (mup || completep));
  m.attn_scale = inv ? 1.0 / double(c.head_dim) : 1.0 / std::sqrt(double(c.head_dim));
  const bool depth_init = c.resid_init == "depth" || (c.resid_init == "auto" && !(mup || completep));
  m.resid_out_divisor = depth_init ? std::sqrt(2.0 * c.depth) : 1.0;
  if (!(mup || completep)) return m;  // SP: every other multiplier is 1

  const double alpha = completep ? c.depth_alpha : 0.0, md = m.m_d, mw = m.m_w;
  m.hidden_init = 1.0 / std::sqrt(mw);
  m.logit = c.output_mult / mw;
  m.residual = std::pow(md, -alpha);
  // Hidden matrices: Adam's update is O(lr) per entry whatever the fan-in, so lr / m_w
  // keeps the change of W x O(1) in width; m_d^(alpha-1) keeps each block's share of the
  // residual update O(1/D) once it is multiplied by m_d^-alpha. Decay lambda * m_w keeps
  // lr * lambda (the decay per step) fixed in width (muP and CompleteP alike: Table 1 of
  // Dey et al.; microsoft/mup's MuAdam). Epsilon follows the gradient's scale, which
  // shrinks as 1/m_w (fan-in) and as m_d^-alpha (the branch multiplier), for every tensor
  // of the residual blocks, matrices and vectors alike.
  const double depth_lr = completep ? std::pow(md, alpha - 1.0) : 1.0;
  const double block_eps = std::pow(md, -alpha) / mw;
  m.hidden_matrix.lr = depth_lr / mw;
  m.hidden_matrix.weight_decay = mw;
  m.hidden_matrix.eps = block_eps;
  // Block norm gains/shifts and biases: width-independent fan-in, the depth rule of lr.
  m.hidden_vector.lr = depth_lr;
  m.hidden_vector.eps = block_eps;
  // The paper scales epsilon in the residual blocks only; the reference code
  // (EleutherAI/nanoGPT-mup, completep) scales its one global epsilon, so every tensor.
  if (c.eps_scope == "all") m.embedding.eps = m.head.eps = m.final_norm.eps = block_eps;
  return m;
}

const GroupRule& rule_for_parameter(const Multipliers& m, const std::string& name, int dim) {
  if (name.rfind("embed.", 0) == 0) return m.embedding;
  if (name.rfind("head.", 0) == 0) return m.head;
  if (name.rfind("final_norm.", 0) == 0) return m.final_norm;
  return dim >= 2 ? m.hidden_matrix : m.hidden_vector;
}

nlohmann::json to_json(const Multipliers& m) {
  nlohmann::json groups = nlohmann::json::array();
  for (const GroupRule* g : {&m.hidden_matrix, &m.hidden_vector, &m.embedding, &m.head, &m.final_norm})
    groups.push_back({{"name", g->name}, {"lr_mult", g->lr}, {"weight_decay_mult", g->weight_decay}, {"eps_mult", g->eps}});
  return {{"m_w", m.m_w},
          {"m_d", m.m_d},
          {"residual_mult", m.residual},
          {"hidden_init_mult", m.hidden_init},
          {"resid_out_init_divisor", m.resid_out_divisor},
          {"logit_mult", m.logit},
          {"attn_scale", m.attn_scale},
          {"groups", groups}};
}

}  // namespace shapelaw
