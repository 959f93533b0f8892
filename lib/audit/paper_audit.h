#pragma once
// `audit paper`: the paper's own numbers recomputed with its constants. Reproduces
// Table 4 / Table 8 / §4.5 / C.0.34–C.0.37 thresholds with κ = 2.43, compares the three
// D_crit forms (κ·ln W, τ = 2.06·W^0.44, Table 10's column), recomputes Table 10's
// ratios and Table 9's status labels, the §5.1 "wide GPT-3" redesign, and the
// parameter-count check of every transcribed row with the tables' cross-conflicts.
#include "audit/report.h"
#include "audit/table_check.h"
#include "audit/verdict.h"

namespace shapelaw::audit {

Report paper_report(const CheckOptions& check_options, const VerdictOptions& verdict_options);
// D_crit under the three paper forms at the given widths (plus the paper's widths).
Report laws_report(const std::vector<int64_t>& widths);

}  // namespace shapelaw::audit
