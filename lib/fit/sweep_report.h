#pragma once
// What fit-law sweep writes beside sweep.json, laid out from it: the study's README.md, the
// plots' data with the gnuplot script that draws them, and the overview of several studies
// (make published's report-published/README.md). Nothing here computes a statistic.
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/sweep.h"

namespace shapelaw::fit {

// README.md of a sweep directory, from sweep.json alone.
std::string sweep_readme(const nlohmann::json& sweep);

// The plots' data (CSV) and the gnuplot script that draws them, as (file name, content).
std::vector<std::pair<std::string, std::string>> sweep_plot_files(const SweepResult& r);

// One row per study (who, W range, D range, tokens, runs past the paper's D_crit, verdict, the
// best law with Phi's D_crit against 2.43 ln W) and the paragraph that answers the paper's
// question across them, in markdown; `links` (one per sweep, may be empty) link each row.
std::string sweeps_overview(const std::vector<nlohmann::json>& sweeps, const std::vector<std::string>& links);

}  // namespace shapelaw::fit
