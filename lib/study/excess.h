#pragma once
// The direct test of a depth penalty, per width: the depth with the lowest (mean) validation
// loss, and how much worse the deepest run is.
//   excess(W) = L(D_max, W) − min_D L(D, W),   SE = s·√(1/n_best + 1/n_deepest)
// with s the pooled seed SD (replicates.h). The best depth is the minimum of noisy means, which
// biases the excess up by about one SE: the verdicts ask for more than two.
#include <string>
#include <vector>

#include "study/replicates.h"

namespace shapelaw::study {

struct WidthExcess {
  int width = 0;
  int best_depth = 0, deepest_depth = 0;
  double best_loss = 0, deepest_loss = 0;
  int n_best = 0, n_deepest = 0;
  double excess = 0;
  double se = -1;  // < 0: no seed SD
  bool deepest_is_best() const { return best_depth == deepest_depth; }
};
// One cell per (width, depth) expected (the selected runs of an arm); widths with fewer than
// `min_depths` depths are not depth sweeps and are left out.
std::vector<WidthExcess> excess_per_width(const std::vector<Cell>& selected, const SeedSpread& spread,
                                          int min_depths = 2);

// The one rule both reports state a penalty by:
//   deepest is best            -> vanishes (the deepest run is the best)
//   excess ≤ 2 SE              -> vanishes (within 2 SE)
//   reference − excess > 2·√2·SE -> survives but shrinks (against the reference arm's excess)
//   else                       -> survives (k SE)
//   no SE                      -> present / absent by sign, "no seed SD to judge it by"
enum class Penalty { vanishes, shrinks, survives, unjudged };
struct PenaltyVerdict {
  Penalty state = Penalty::unjudged;
  std::string text;  // "survives (+0.192 nats, 6.4 SE)"
};
PenaltyVerdict judge_penalty(const WidthExcess& e, const WidthExcess* reference = nullptr);

}  // namespace shapelaw::study
