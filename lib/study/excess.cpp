#include "study/excess.h"

#include <cmath>
#include <cstdio>
#include <map>

namespace shapelaw::study {

std::vector<WidthExcess> excess_per_width(const std::vector<Cell>& selected, const SeedSpread& spread, int min_depths) {
  std::map<int, std::vector<const Cell*>> by_width;
  for (const Cell& c : selected) by_width[c.width].push_back(&c);
  std::vector<WidthExcess> out;
  for (const auto& [w, cs] : by_width) {
    if (int(cs.size()) < min_depths) continue;
    const Cell *best = cs[0], *deep = cs[0];
    for (const Cell* c : cs) {
      if (c->mean < best->mean || (c->mean == best->mean && c->depth < best->depth)) best = c;
      if (c->depth > deep->depth) deep = c;
    }
    WidthExcess e;
    e.width = w;
    e.best_depth = best->depth;
    e.best_loss = best->mean;
    e.n_best = best->n;
    e.deepest_depth = deep->depth;
    e.deepest_loss = deep->mean;
    e.n_deepest = deep->n;
    e.excess = deep->mean - best->mean;
    if (spread.available) e.se = spread.sd * std::sqrt(1.0 / e.n_best + 1.0 / e.n_deepest);
    out.push_back(e);
  }
  return out;
}

namespace {
std::string fmt(const char* f, double a, double b = 0) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}
}  // namespace

PenaltyVerdict judge_penalty(const WidthExcess& e, const WidthExcess* reference) {
  if (e.deepest_is_best())
    return {Penalty::vanishes, "vanishes: the deepest run (D=" + std::to_string(e.deepest_depth) + ") is the best"};
  if (e.se < 0)
    return {Penalty::unjudged, fmt("is %+.3f nats at the deepest run (no seed SD to judge it by)", e.excess)};
  if (e.excess <= 2 * e.se) return {Penalty::vanishes, fmt("vanishes (%+.3f nats, within 2 SE)", e.excess)};
  if (reference && reference->se >= 0 && reference->excess - e.excess > 2 * std::sqrt(2.0) * e.se)
    return {Penalty::shrinks, fmt("survives but shrinks by %.3f nats (to ", reference->excess - e.excess) +
                                  fmt("%+.3f)", e.excess)};
  return {Penalty::survives, fmt("survives (%+.3f nats, %.1f SE)", e.excess, e.excess / e.se)};
}

}  // namespace shapelaw::study
