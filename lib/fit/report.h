#pragma once
// Rendering a fit record: a readable table, markdown, CSV or JSON on stdout, and
// the per-row predictions CSV.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/analysis.h"

namespace shapelaw::fit {

// format: table | markdown | csv | json. Throws Error for an unknown format.
std::string render_record(const nlohmann::json& record, const std::string& format);
std::string predictions_csv(const std::vector<PredictionRow>& rows);
// Shortest round-trip text of a double ("nan" never appears: empty instead).
std::string format_double(double v);

}  // namespace shapelaw::fit
