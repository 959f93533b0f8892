#include "fit/resample.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>

#include "fit/parallel.h"

namespace shapelaw::fit {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Restarts for resampled fits: the full-data optimum, plus other distinct local optima
// whose objective is within 10% of it (a resample may prefer a nearby basin), the best
// `max_starts` of them when it is > 0 (the optima are in ascending objective order).
std::vector<Eigen::VectorXd> resample_starts(const FitResult& full, int max_starts) {
  std::vector<Eigen::VectorXd> s;
  if (full.optima_params.empty()) return {full.p};
  for (size_t q = 0; q < full.optima_params.size(); ++q) {
    if (max_starts > 0 && (int)s.size() >= max_starts) break;
    if (q == 0 || (q < full.optima.size() && full.optima[q].first <= 1.1 * full.optima[0].first))
      s.push_back(full.optima_params[q]);
  }
  return s;
}
std::vector<std::vector<int>> members_by_group(const std::vector<int>& groups) {
  std::map<int, std::vector<int>> by;
  for (size_t i = 0; i < groups.size(); ++i) by[groups[i]].push_back((int)i);
  std::vector<std::vector<int>> out;
  for (auto& [g, v] : by) out.push_back(v);
  return out;
}

BootstrapResult bootstrap(const Model& m, const std::vector<Point>& pts, const std::vector<int>& groups,
                          const FitResult& full, const FitOptions& o, int B, uint64_t seed) {
  BootstrapResult br;
  br.requested = B;
  auto members = members_by_group(groups);
  const size_t G = members.size();
  std::vector<Eigen::VectorXd> draws(B);
  std::vector<int> status(B, 0);  // 0 ok, 1 failed, 2 not converged (kept)
  FitOptions inner = o;
  inner.threads = 1;
  std::vector<Eigen::VectorXd> starts = resample_starts(full, o.resample_starts);
  parallel_for(B, o.threads, [&](size_t b) {
    std::mt19937_64 rng(splitmix64(seed ^ splitmix64(b + 1)));
    std::uniform_int_distribution<size_t> pick(0, G - 1);
    std::vector<Point> sample;
    sample.reserve(pts.size());
    for (size_t g = 0; g < G; ++g)
      for (int i : members[pick(rng)]) sample.push_back(pts[i]);
    LMResult r = refit(m, sample, starts, inner);
    if (!std::isfinite(r.objective) || !r.p.allFinite()) {
      status[b] = 1;
      return;
    }
    draws[b] = r.p;
    status[b] = r.converged ? 0 : 2;
  });
  for (int b = 0; b < B; ++b) {
    if (status[b] == 1) { ++br.failed; continue; }
    if (status[b] == 2) ++br.not_converged;
    br.draws.push_back(draws[b]);
  }
  return br;
}

Extrapolation extrapolate(const Model& m, const std::vector<Point>& pts, const FitOptions& o, double holdout) {
  Extrapolation ex;
  const int n = (int)pts.size();
  int n_test = std::max(1, (int)std::lround(holdout * n));
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  double key_scale = m.response == "tau" ? 0 : 1;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    double ka = key_scale ? pts[a].N : pts[a].W, kb = key_scale ? pts[b].N : pts[b].W;
    return ka < kb;
  });
  int n_train = n - n_test;
  if (n_train <= m.n_free()) {
    ex.reason = "too few rows left to fit after holding out the largest " + std::to_string(n_test);
    return ex;
  }
  std::vector<Point> train;
  for (int q = 0; q < n_train; ++q) train.push_back(pts[order[q]]);
  FitResult fr = fit_multistart(m, train, o);
  ex.done = true;
  ex.n_train = n_train;
  ex.n_test = n_test;
  const Point& first = pts[order[n_train]];
  ex.n_threshold = key_scale ? first.N : first.W;
  double ss = 0, sum = 0, mx = 0;
  for (int q = n_train; q < n; ++q) {
    int i = order[q];
    double f = m.predict(pts[i], fr.p);
    ex.test_index.push_back(i);
    ex.predicted.push_back(f);
    double e = f - pts[i].y;
    ss += e * e;
    sum += e;
    mx = std::max(mx, std::abs(e));
  }
  ex.rmse = std::sqrt(ss / n_test);
  ex.mean_error = sum / n_test;
  ex.max_abs_error = mx;
  return ex;
}

}  // namespace shapelaw::fit
