#pragma once
// Models to audit: rows of a models CSV (examples/flagship-models.csv; columns in
// docs/formats.md "## audit") or Hugging Face config.json files, as one list.
#include <string>
#include <vector>

#include "audit/arch.h"

namespace shapelaw::audit {

struct ModelEntry {
  Arch arch;
  std::string origin;              // "file:line" or the config path
  std::string family, kind;        // kind: "dense" or "moe"
  double stated_params = 0;        // total parameters as published (0: not given)
  double stated_active = 0;        // MoE: active parameters per token as published
  std::string source_arch, source_params;  // where the numbers come from
  std::string count_note;          // documented reason a stated count differs from ours
};

class RowReader;
// Reads the optional architecture columns of a models CSV row (heads, kv_heads, head_dim,
// ffn, vocab, mlp, norm, tied, biases, learned_positions, experts, experts_active,
// shared_experts, moe_ffn, dense_layers, extra) into `arch`; absent columns keep its values.
void read_arch_columns(const RowReader& row, Arch& arch);

// Reads a models CSV. Without keep_going the first bad row throws Error naming the file,
// line and field; with keep_going bad rows are skipped and their messages appended to
// *errors. A missing required column (name, depth, width) always throws.
std::vector<ModelEntry> load_models_csv(const std::string& path, bool keep_going,
                                        std::vector<std::string>* errors);

// Any number of inputs: *.csv (models table), *.json (config.json), or a directory
// holding config.json.
std::vector<ModelEntry> load_models(const std::vector<std::string>& inputs, bool keep_going,
                                    std::vector<std::string>* errors);

}  // namespace shapelaw::audit
