#pragma once
// A fitted law's curve off the grid, per width: loss against depth from D = 1 to 1.5× the
// deepest run, evaluated with the law's own predict (fit/laws.h) at the record's estimates,
// so no plot restates a formula. Per width N(D) is the least-squares line through the width's
// runs (identical blocks make N linear in D) in the record's N (non-embedding, total or
// 12·D·W²), and T the tokens its runs saw: one number where they all saw the same, else
// (a budget per configuration) the least-squares line in D through them as well.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/runs.h"

namespace shapelaw::study {

struct CurvePoint {
  std::string model;
  int width = 0;
  double depth = 0, N = 0, T = 0, loss = 0;
};
// models: names in the record (unknown or unfitted ones are skipped); `steps` points per width.
std::vector<CurvePoint> law_curves(const nlohmann::json& fit, const std::vector<std::string>& models,
                                   const std::vector<Run>& runs, int steps = 60);
std::string curves_csv(const std::vector<CurvePoint>& points);

}  // namespace shapelaw::study
