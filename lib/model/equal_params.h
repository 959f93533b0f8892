#pragma once
// Shapes at (nearly) equal parameters, the paper's Table 10 question ("at equal N, which
// depth is best?") at any scale: for each depth, the width (a multiple of the head
// dimension) whose parameter count is nearest the target. Torch-free.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "model/model_config.h"

namespace shapelaw {

// Which count is held equal: "non-embedding" (Kaplan's N, blocks + final norm),
// "12DW2" (the paper's 12·D·W²) or "total" (with embedding and head).
int64_t parameter_count(const ParamCounts& p, const std::string& count);

struct EqualParamShape {
  int depth = 0, width = 0;
  ParamCounts params;
  double deviation = 0;  // count / target - 1
};

// For every depth: the multiple of base.head_dim >= head_dim nearest the target count
// (the other fields of `base` — vocabulary, MLP, norm, ties — as given). Throws Error on
// a target or depth out of range.
std::vector<EqualParamShape> equal_param_shapes(const ModelConfig& base, int64_t target,
                                                const std::vector<int>& depths, const std::string& count);

// The shapes as a grid file (pipelines/grids: "run depth width [flags]", each row under
// a comment with its counts), a table, or JSON. Run names: <prefix>-d<D>-w<W>.
std::string render_equal_param_shapes(const std::vector<EqualParamShape>& shapes, int64_t target,
                                      const std::string& count, const std::string& format, const std::string& prefix,
                                      const std::string& extra_flags);

}  // namespace shapelaw
