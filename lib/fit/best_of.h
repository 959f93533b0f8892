#pragma once
// Sweeps over one option (e.g. a learning-rate sweep: runs that differ only in config.lr,
// and maybe config.seed). `--best-of KEY` keeps, per configuration, the runs of the KEY
// value with the lowest mean response over its runs (seeds); those runs stay replicates
// for the pure-error machinery (fit/replicates.h).
//   configuration = binding config less KEY and "seed" (for KEY "lr" also less "min_lr"
//                   when "min_lr_ratio" > 0, since min_lr then follows lr);
//   candidates    = distinct values of KEY within a configuration;
//   score         = mean response of a candidate's runs; lowest wins, ties to the smaller value.
// A configuration whose winner is the smallest or largest value of its sweep is flagged
// (the optimum may lie outside: widen the sweep); one with a single value is no sweep.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/table.h"

namespace shapelaw::fit {

struct BestOfResult {
  std::vector<Row> rows;      // the chosen candidates' rows, canonical order
  nlohmann::json record;      // fit.json "best_of"
  std::vector<std::string> warnings;
};

// The rule itself, on one configuration's candidates (values ascending, each with its mean
// response): the index of the lowest mean (ties keep the smaller value) and its edge flag
// ("smallest", "largest", or "" when interior or the only value). The study's reports use it too.
struct BestChoice {
  size_t index = 0;
  std::string edge;
  bool single = false;
};
BestChoice choose_best(const std::vector<double>& ascending_values, const std::vector<double>& means);
// Throws Error naming a row whose configuration lacks KEY (or holds a non-number).
BestOfResult select_best_of(const std::vector<Row>& rows, const std::string& key);

// Without --best-of: rows of one replicate group, or of equal D, W, N, T, whose binding
// configurations differ in anything but the seed are not replicates; one warning per such
// set, naming the keys (and suggesting --best-of). Table rows are compared on "lr" only
// (their other columns may be anything). Rows of equal shape whose configurations are equal
// in full (seed included; for a table, every column but run, group, response, loss_se and
// tokenizer) are named as duplicates.
std::vector<std::string> check_replicates(const std::vector<Row>& rows);

// Dotted keys ("model.depth") whose values differ between two JSON objects.
std::vector<std::string> differing_keys(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace shapelaw::fit
