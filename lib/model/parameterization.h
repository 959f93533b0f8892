#pragma once
// The multipliers of a parameterization (SP, muP, CompleteP / depth-muP) relative to a
// base shape W0 x D0 at which the base learning rate, init, decay and epsilon were tuned.
// Equations in model/model.h; the rules follow Yang et al. (muP, Tensor Programs V) and
// Dey et al. 2025 (CompleteP, arXiv 2505.01618). Torch-free: the trainer, --help, tests
// and the memory plan read the same numbers.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_config.h"

namespace shapelaw {

// AdamW settings of one kind of tensor, as multiples of the base lr, weight decay, eps.
struct GroupRule {
  std::string name;  // hidden_matrix | hidden_vector | embedding | head | final_norm
  double lr = 1, weight_decay = 1, eps = 1;  // weight_decay 0: never decayed
};

struct Multipliers {
  double m_w = 1, m_d = 1;       // W / W0, D / D0
  double residual = 1;           // branch multiplier: h + residual * F(h)
  double hidden_init = 1;        // std multiplier of hidden matrices (qkv, attn out, MLP)
  double resid_out_divisor = 1;  // residual output projections' std is further divided by it: sqrt(2D) or 1
  double logit = 1;              // logits = logit * h_D U^T
  double attn_scale = 1;         // softmax(attn_scale * q k^T)
  GroupRule hidden_matrix{"hidden_matrix"}, hidden_vector{"hidden_vector", 1, 0, 1},
      embedding{"embedding"}, head{"head"}, final_norm{"final_norm", 1, 0, 1};
};

Multipliers parameterization_multipliers(const ModelConfig& config);

// Which rule a named parameter of the Transformer follows ("embed.weight",
// "block3.attn.qkv.weight", "block0.norm1.gain", "final_norm.shift", "head.weight").
const GroupRule& rule_for_parameter(const Multipliers& m, const std::string& name, int dim);

nlohmann::json to_json(const Multipliers& m);

}  // namespace shapelaw
