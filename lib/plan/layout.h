#pragma once
// Choosing how a run is laid out on GPUs so that it fits by construction: the number
// of GPUs (data-parallel ranks), ZeRO-1 or -2 when there are several, activation
// recomputation, and the micro-batch; and the table of a whole grid of runs with totals
// (`make -f pipelines/paper.mk plan`).
#include <string>
#include <vector>

#include "plan/memory_plan.h"

namespace shapelaw {

// Among 1, 2, 4, ... GPUs (at most max_gpus, dividing the batch's sequences), without and
// with recomputation (ZeRO-1 or ZeRO-2 whenever there are several ranks): the layout of
// fewest GPU-hours, then fewest GPUs, then lowest ZeRO stage, whose peak fits
// options.gpu_memory; its micro-batch is the
// largest that fits, at most options.micro_batch. When nothing fits, the plan of the
// largest layout (max GPUs, recomputation) with fits = false.
Plan choose_layout(const PlanOptions& options, int max_gpus);

// The train flags that realize a layout (--micro-batch, --zero, --activation-checkpointing;
// the GPU count is the launcher's business).
std::string layout_flags(const Plan& plan);

struct GridRow {
  std::string run;
  Plan plan;
};
// One line per run (parameters, tokens, GPUs, micro-batch, recompute, ZeRO, peak per GPU,
// fits, GPU-hours), then the totals.
std::string format_grid(const std::vector<GridRow>& rows);
nlohmann::json grid_json(const std::vector<GridRow>& rows);

}  // namespace shapelaw

namespace shapelaw {

// One line of a study grid (pipelines/grids/*.grid): "run depth width [train flags]",
// '#' comments and blank lines skipped. The train flags of a row, as train's arguments:
// "--depth D --width W" then the extra flags (which win, as they come last).
struct GridLine {
  std::string run;
  std::vector<std::string> train_args;
  int line = 0;
};
std::vector<GridLine> read_grid(const std::string& path);  // throws Error naming file:line

}  // namespace shapelaw
