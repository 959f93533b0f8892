#pragma once
// Leave-one-out (leave-one-group-out when groups are given): a refit without each group,
// predicting the rows left out. One refit per group costs O(groups x rows), so above
// `max_groups` groups a seeded random sample of max_groups groups is left out, each
// exactly, and loo_rmse is the RMSE over the rows of that sample (stated in a note and in
// the metrics: loo_groups, loo_groups_left_out). A long one shows its progress on stderr.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fitter.h"

namespace shapelaw::fit {

struct LeaveOneOut {
  std::vector<double> predicted;  // per row; NaN where not left out or the refit failed
  std::vector<char> left_out;     // rows whose group was left out
  size_t groups = 0, groups_left_out = 0;
  double operator[](size_t i) const { return predicted[i]; }
  // loo_rmse and loo_failed (rows left out whose refit failed) into metrics; when sampled,
  // also loo_groups and loo_groups_left_out, and one sentence into notes.
  void add_metrics(const std::vector<double>& observed, nlohmann::json& metrics, nlohmann::json& notes) const;
};

// max_groups 0: every group. The sample depends on seed and the group count only (the
// same groups for every law of one fit, whatever the thread count). label names the law
// in progress lines.
LeaveOneOut leave_one_out(const Model& m, const std::vector<Point>& pts, const std::vector<int>& groups,
                          const FitResult& full, const FitOptions& o, size_t max_groups = 0, uint64_t seed = 0,
                          const std::string& label = "");

// The groups a sample of `count` of `total` leaves out, ascending (all of them when count
// >= total): a Fisher-Yates shuffle driven by splitmix64(seed), the same on every platform.
std::vector<size_t> sample_groups(size_t total, size_t count, uint64_t seed);

}  // namespace shapelaw::fit
