#pragma once
// Refits on perturbed data: case bootstrap (by group when groups are given),
// and fit-small-predict-large extrapolation (leave-one-out: fit/loo.h).
// Every bootstrap draw b uses its own generator seeded from (seed, b), so results
// do not depend on the number of threads.
#include <cstdint>
#include <vector>

#include <Eigen/Dense>

#include "fit/fitter.h"

namespace shapelaw::fit {

struct BootstrapResult {
  int requested = 0, failed = 0, not_converged = 0;
  std::vector<Eigen::VectorXd> draws;  // successful draws, param_names order
};

BootstrapResult bootstrap(const Model& m, const std::vector<Point>& pts, const std::vector<int>& groups,
                          const FitResult& full, const FitOptions& o, int B, uint64_t seed);

// Leave-one-out (leave-one-group-out): fit/loo.h.

// Starts of a refit on resampled data: the full-data optimum, plus the other local optima
// within 10% of its objective (the best max_starts of them when max_starts > 0).
std::vector<Eigen::VectorXd> resample_starts(const FitResult& full, int max_starts = 0);
// Row indices of each group, groups in ascending id order.
std::vector<std::vector<int>> members_by_group(const std::vector<int>& groups);

struct Extrapolation {
  bool done = false;
  std::string reason;  // when not done
  int n_train = 0, n_test = 0;
  double n_threshold = 0;  // smallest N held out
  double rmse = 0, mean_error = 0, max_abs_error = 0;
  std::vector<int> test_index;
  std::vector<double> predicted;
};
// Fits on the rows with the smallest N and predicts the largest fraction `holdout`.
Extrapolation extrapolate(const Model& m, const std::vector<Point>& pts, const FitOptions& o, double holdout);

uint64_t splitmix64(uint64_t x);

}  // namespace shapelaw::fit
