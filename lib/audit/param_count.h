#pragma once
// Parameter counts from an architecture. The paper's convention is N = 12·D·W²
// (attention 4·W² + GELU MLP 8·W² per layer, embeddings excluded); its published
// totals (Table 9) add untied input and output embeddings, 2·V·W. The detailed count
// below also handles grouped-query / multi-query / latent attention, gated MLPs
// (SwiGLU, GeGLU), biases, norms, learned positions, tied embeddings and MoE.
#include <cstdint>

#include "audit/arch.h"

namespace shapelaw::audit {

struct ParamCount {
  int64_t embedding = 0;             // input (+ output unless tied) + learned positions
  int64_t non_embedding = 0;         // all blocks + final/embedding norms (all experts)
  int64_t total = 0;                 // embedding + non_embedding
  int64_t active_non_embedding = 0;  // MoE: routed experts_active + shared per token; dense: = non_embedding
  int64_t active_total = 0;
  int64_t paper_12DW2 = 0;           // 12·D·W²
};

ParamCount count_params(const Arch& arch);
inline int64_t paper_12DW2(int64_t depth, int64_t width) { return 12 * depth * width * width; }

// Width (any real >0) at which count_params(arch with that width).total equals `target`;
// heads, ffn and head_dim are scaled with the width (ffn ∝ W, head_dim kept). Used to
// say which width a stated count implies. Returns 0 if none in [1, 10^7].
double implied_width(const Arch& arch, double target_total);

}  // namespace shapelaw::audit
