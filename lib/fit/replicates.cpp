#include "fit/replicates.h"

#include <cmath>
#include <map>
#include <tuple>

#include "fit/stats.h"

namespace shapelaw::fit {

PureError pure_error(const std::vector<Point>& pts, bool log_space) {
  std::map<std::tuple<double, double, double, double>, std::vector<const Point*>> configurations;
  for (const auto& p : pts) configurations[{p.D, p.W, p.N, p.T}].push_back(&p);
  auto z = [&](const Point* p) { return log_space ? std::log(p->y) : p->y; };  // fitting space
  PureError pe;
  double ss_response = 0;
  for (const auto& [key, members] : configurations) {
    if (members.size() < 2) continue;
    double sw = 0, swz = 0, sy = 0;
    for (const Point* p : members) { sw += p->weight; swz += p->weight * z(p); sy += p->y; }
    const double zbar = swz / sw, ybar = sy / double(members.size());
    for (const Point* p : members) {
      pe.ss += p->weight * (z(p) - zbar) * (z(p) - zbar);
      ss_response += (p->y - ybar) * (p->y - ybar);
    }
    ++pe.configurations;
    pe.rows += int(members.size());
    pe.df += int(members.size()) - 1;
  }
  if (pe.df > 0) {
    pe.sd_fit_space = std::sqrt(pe.ss / pe.df);
    pe.sd_response = std::sqrt(ss_response / pe.df);
  }
  return pe;
}

LackOfFit lack_of_fit(double rss, int n, int k, const PureError& pe) {
  LackOfFit lof;
  lof.df_pe = pe.df;
  lof.df_lof = n - k - pe.df;
  if (pe.df == 0) {
    lof.reason = "no configuration was run more than once";
  } else if (lof.df_lof <= 0) {
    lof.reason = "the law has at least as many free parameters as there are distinct configurations";
  } else if (!(pe.ss > 0)) {
    lof.reason = "replicates are identical (no pure error)";
  } else {
    lof.ss_lof = std::max(0.0, rss - pe.ss);
    lof.f = (lof.ss_lof / lof.df_lof) / (pe.ss / pe.df);
    lof.p_value = f_sf(lof.f, lof.df_lof, lof.df_pe);
    lof.computed = true;
  }
  return lof;
}

}  // namespace shapelaw::fit
