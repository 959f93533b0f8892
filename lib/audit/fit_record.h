#pragma once
// A critical-depth law from a `fit-law` record (fit.json, schema in docs/formats.md
// "Fit record"): the selected model (or a named one), its `dcrit` form and constants,
// the ansatz parameters A, α, γ, μ when present, `options.phi` ("relative" divides Φ
// by D_crit), and one LawParams per bootstrap draw so intervals carry through.
#include <string>

#include "audit/dcrit_law.h"

namespace shapelaw::audit {

// model_name empty: the record's selected_model. Throws Error naming the file and field.
Law law_from_fit_file(const std::string& path, const std::string& model_name);

}  // namespace shapelaw::audit
