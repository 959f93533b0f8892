#include "study/replicates.h"

#include <cmath>
#include <map>
#include <tuple>

#include "fit/best_of.h"

namespace shapelaw::study {

std::vector<Cell> cells_of(const std::vector<Run>& runs) {
  std::map<std::tuple<int, int, std::string, double>, Cell> by;
  for (const Run& r : runs) {
    Cell& c = by[{r.width, r.depth, r.row, r.lr}];
    c.row = r.row;
    c.depth = r.depth;
    c.width = r.width;
    c.lr = r.lr;
    c.run_ids.push_back(r.run_id);
    c.paths.push_back(r.path);
    c.mean += r.val_loss;  // a sum until the second pass
    ++c.n;
  }
  std::vector<Cell> out;
  for (auto& [key, c] : by) {
    c.mean /= c.n;
    for (const Run& r : runs)
      if (r.row == c.row && r.lr == c.lr && r.width == c.width && r.depth == c.depth)
        c.ss += (r.val_loss - c.mean) * (r.val_loss - c.mean);
    if (c.n > 1) c.sd = std::sqrt(c.ss / (c.n - 1));
    out.push_back(std::move(c));
  }
  return out;
}

SeedSpread pooled_spread(const std::vector<Cell>& cells) {
  SeedSpread s;
  double ss = 0;
  int configs = 0;
  for (const Cell& c : cells)
    if (c.n > 1) {
      ss += c.ss;
      s.df += c.n - 1;
      ++configs;
    }
  if (s.df == 0) {
    s.source = "no configuration has two seeds: no seed SD (run with SEEDS=\"42 43 44\")";
    return s;
  }
  s.available = true;
  s.sd = std::sqrt(ss / s.df);
  s.source = "pooled between the seeds of " + std::to_string(configs) + " configuration(s) (df " +
             std::to_string(s.df) + ")";
  return s;
}

std::vector<BestLr> best_lr_per_row(const std::vector<Cell>& cells) {
  std::map<std::tuple<int, int, std::string>, std::vector<const Cell*>> rows;  // cells come lr-ascending
  for (const Cell& c : cells) rows[{c.width, c.depth, c.row}].push_back(&c);
  std::vector<BestLr> out;
  for (const auto& [key, cs] : rows) {
    std::vector<double> lrs, means;
    for (const Cell* c : cs) {
      lrs.push_back(c->lr);
      means.push_back(c->mean);
    }
    const fit::BestChoice choice = fit::choose_best(lrs, means);
    out.push_back({*cs[choice.index], choice.edge, choice.single, lrs});
  }
  return out;
}

}  // namespace shapelaw::study
