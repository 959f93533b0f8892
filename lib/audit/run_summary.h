#pragma once
// A training run's summary.json (docs/formats.md "summary.json", written by `train`) as a
// model to audit: architecture from depth/width/heads/head_dim/vocab_size/mlp/norm/
// tie_embeddings, stated parameters from params.total.
#include <string>

#include <nlohmann/json.hpp>

#include "audit/model_table.h"
#include "records/run_summary.h"

namespace shapelaw::audit {

using records::is_run_summary;
ModelEntry model_from_run_summary(const nlohmann::json& j, const std::string& path);

}  // namespace shapelaw::audit
