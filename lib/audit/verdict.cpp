#include "audit/verdict.h"

#include <algorithm>
#include <cmath>

namespace shapelaw::audit {

std::string verdict(double r, const VerdictOptions& o) {
  if (!std::isfinite(r)) return "n/a";
  if (r <= 1.0) return "within D_crit";
  if (r <= o.near) return "near D_crit";
  if (r <= o.far) return "over-deep";
  return "far over-deep";
}

std::vector<double> thresholds_crossed(const Interval& ci, const VerdictOptions& o) {
  std::vector<double> out;
  for (double t : {1.0, o.near, o.far})
    if (ci.lo < t && t < ci.hi) out.push_back(t);
  return out;
}

std::optional<Redesign> redesign(int64_t depth, double dcrit, double n_original, int64_t multiple) {
  if (!std::isfinite(dcrit) || dcrit <= 0 || n_original <= 0) return std::nullopt;
  Redesign r;
  r.depth = std::max<int64_t>(1, std::llround(dcrit));
  if (depth <= r.depth) return std::nullopt;
  double w = std::sqrt(n_original / (12.0 * static_cast<double>(r.depth)));
  r.width = std::max<int64_t>(multiple, std::llround(w / static_cast<double>(multiple)) * multiple);
  r.n_original = n_original;
  r.n_redesign = 12.0 * static_cast<double>(r.depth) * static_cast<double>(r.width) * static_cast<double>(r.width);
  return r;
}

}  // namespace shapelaw::audit
