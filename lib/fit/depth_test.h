#pragma once
// The law-free depth test of fit-law sweep: at every width with two or more depths, the loss
// of each depth at matched token counts, the best depth, and the change from each depth to
// the next deeper one against the noise. No law is fitted: it answers the paper's question
// ("past D_crit(W), does adding layers raise the loss?") from the runs alone.
//
// Matched tokens, per width:
//   logged        every run logged the same token counts (within 0.1%): their losses there
//   interpolated  the runs logged different counts: each run's loss at the checkpoints of the
//                 run with the fewest of them, inside the range every run covers, linear in ln T
//                 between the two checkpoints around it
//   final         one row per run and different budgets (e.g. 20 tokens per parameter): the
//                 final losses, not matched (said in the output)
// Runs of one shape (seeds) are averaged; the noise of a difference between two depths is the
// pooled seed SD where the data has seeds, else an assumed SD (--seed-sd), said so.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/table.h"

namespace shapelaw::fit {

// The paper's critical depth, D_crit(W) = 2.43 ln W (its §3.4 fit).
double paper_dcrit(double width);

struct DepthTestOptions {
  double assumed_seed_sd = 0.01;  // the noise SD where the data has no seeds (nats)
  double z = 2.0;                 // a difference counts beyond the noise past z standard errors
};

struct DepthCurve {
  double depth = 0;
  std::vector<std::string> runs;  // the runs of this shape (seeds), sorted
  std::vector<double> loss;       // mean over the runs at each matched token count
};

struct DepthStep {
  double from = 0, to = 0;     // depths, to > from
  std::vector<double> delta;   // loss(to) - loss(from) at each matched token count
  double final_delta = 0;      // at the largest matched token count
  double se = 0;               // of final_delta
  int sign = 0;                // +1 deeper worse beyond the noise, -1 deeper better beyond it, 0 within it
  bool past_dcrit = false;     // `to` is past the paper's D_crit(W)
};

struct WidthDepthTest {
  double width = 0;
  double paper_dcrit = 0;
  std::string matching;        // logged, interpolated or final
  std::vector<double> tokens;  // matched token counts (for "final": each depth's mean budget)
  std::vector<DepthCurve> curves;      // depths ascending
  std::vector<double> best_depth;      // at each matched token count
  std::vector<DepthStep> steps;        // consecutive depths
  // a depth past D_crit(W) below every shallower depth at every matched token count (0: none)
  double past_dcrit_winner = 0;
  // (shallow, deep) pairs with deep past D_crit(W) and worse than shallow beyond the noise at the
  // largest matched token count: the paper's penalty, seen without a law
  std::vector<std::pair<double, double>> worse_past_dcrit;
  std::string sentence;        // what this width says, in words
};

struct DepthTest {
  std::vector<WidthDepthTest> widths;  // ascending; only widths with >= 2 depths
  double seed_sd = 0;
  int seed_sd_df = 0;                  // 0: assumed, not measured
  std::string noise_note;
  int widths_with_past_dcrit = 0;      // widths where some depth is past D_crit and a shallower one exists
  int widths_with_penalty = 0;         // of them, where some deeper run past D_crit is worse beyond the noise
};

// Throws Error when no width has two depths (the test needs them).
DepthTest depth_test(const std::vector<Row>& rows, const DepthTestOptions& options);

nlohmann::json depth_test_json(const DepthTest& t);

}  // namespace shapelaw::fit
