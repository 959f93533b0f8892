#pragma once
// The model audit: for each model, D_crit(W) under a law (with its interval), D/D_crit,
// the verdict, the equal-parameter redesign and the predicted loss difference.
#include <optional>
#include <string>
#include <vector>

#include "audit/dcrit_law.h"
#include "audit/model_table.h"
#include "audit/param_count.h"
#include "audit/report.h"
#include "audit/verdict.h"

namespace shapelaw::audit {

struct AuditOptions {
  VerdictOptions verdict;
  bool n_counted = false;   // redesign N: counted non-embedding (active for MoE) instead of 12·D·W²
  int64_t multiple = 128;   // redesign width multiple
  double tolerance = 0.02;  // stated vs counted parameters
  bool allow_degenerate = false;  // compute ΔL even from a law whose loss predictions are refused
  // --dcrit-only: the law's D_crit (with its CI and the extrapolation flags) and nothing derived
  // from it: no verdict, redesign or ΔL. For a law fitted on small models, quoted about large ones.
  bool dcrit_only = false;
};

struct AuditRow {
  ModelEntry model;
  ParamCount count;
  double count_diff = 0;  // stated/counted − 1 (0 when not stated)
  double dcrit = 0, ratio = 0;
  std::optional<Interval> dcrit_ci, ratio_ci;
  std::string verdict;
  std::vector<double> crossed;
  std::optional<Redesign> redesign;
  double delta_loss = 0;  // NaN when the law cannot predict loss or there is no redesign
  std::optional<Interval> delta_ci;
  // Axes (N, W, D) on which the model lies outside the fitted law's data, with the factor by
  // which it does (value/max above, min/value below); empty inside or for a paper law.
  std::vector<std::pair<std::string, double>> outside;
};

AuditRow audit_model(const ModelEntry& model, const Law& law, const AuditOptions& options);
Report audit_report(const std::vector<ModelEntry>& models, const Law& law, const AuditOptions& options);

}  // namespace shapelaw::audit
