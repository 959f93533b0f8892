#include "fit/loo.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "fit/parallel.h"
#include "fit/resample.h"

namespace shapelaw::fit {

std::vector<size_t> sample_groups(size_t total, size_t count, uint64_t seed) {
  std::vector<size_t> order(total);
  std::iota(order.begin(), order.end(), size_t(0));
  if (count >= total) return order;
  uint64_t state = seed;
  for (size_t i = 0; i < count; ++i) {  // the first `count` places of a Fisher-Yates shuffle
    state = splitmix64(state);
    std::swap(order[i], order[i + size_t(state % uint64_t(total - i))]);
  }
  order.resize(count);
  std::sort(order.begin(), order.end());
  return order;
}

LeaveOneOut leave_one_out(const Model& m, const std::vector<Point>& pts, const std::vector<int>& groups,
                          const FitResult& full, const FitOptions& o, size_t max_groups, uint64_t seed,
                          const std::string& label) {
  const auto members = members_by_group(groups);
  LeaveOneOut loo;
  loo.predicted.assign(pts.size(), std::numeric_limits<double>::quiet_NaN());
  loo.left_out.assign(pts.size(), 0);
  loo.groups = members.size();
  const std::vector<size_t> chosen =
      sample_groups(members.size(), max_groups > 0 ? max_groups : members.size(), splitmix64(seed ^ 0x100u));
  loo.groups_left_out = chosen.size();
  for (size_t g : chosen)
    for (int i : members[g]) loo.left_out[size_t(i)] = 1;
  FitOptions inner = o;
  inner.threads = 1;
  const std::vector<Eigen::VectorXd> starts = resample_starts(full, o.resample_starts);
  parallel_for_progress(chosen.size(), o.threads, "leave-one-out" + (label.empty() ? "" : " " + label), [&](size_t q) {
    const auto& out_rows = members[chosen[q]];
    std::vector<char> out(pts.size(), 0);
    for (int i : out_rows) out[size_t(i)] = 1;
    std::vector<Point> train;
    train.reserve(pts.size());
    for (size_t i = 0; i < pts.size(); ++i)
      if (!out[i]) train.push_back(pts[i]);
    if ((int)train.size() <= m.n_free()) return;
    LMResult r = refit(m, train, starts, inner);
    if (!std::isfinite(r.objective)) return;
    for (int i : out_rows) loo.predicted[size_t(i)] = m.predict(pts[size_t(i)], r.p);
  });
  return loo;
}

void LeaveOneOut::add_metrics(const std::vector<double>& observed, nlohmann::json& metrics,
                              nlohmann::json& notes) const {
  double ss = 0;
  int count = 0, rows = 0;
  for (size_t i = 0; i < observed.size(); ++i) {
    if (!left_out[i]) continue;
    ++rows;
    if (std::isfinite(predicted[i])) {
      ss += (predicted[i] - observed[i]) * (predicted[i] - observed[i]);
      ++count;
    }
  }
  metrics["loo_rmse"] = count && std::isfinite(ss) ? nlohmann::json(std::sqrt(ss / count)) : nlohmann::json(nullptr);
  metrics["loo_failed"] = rows - count;
  if (groups_left_out < groups) {
    metrics["loo_groups"] = groups;
    metrics["loo_groups_left_out"] = groups_left_out;
    notes.push_back("leave-one-out on a seeded random " + std::to_string(groups_left_out) + " of " +
                    std::to_string(groups) + " groups (" + std::to_string(rows) +
                    " rows), each refit exactly: LOO-RMSE is estimated from them (--loo-max-groups 0: all)");
  }
}

}  // namespace shapelaw::fit
