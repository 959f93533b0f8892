#pragma once
// `probe-grads summarize`: many grad_fit.json files -> one tau table (CSV) that
// `fit-law --tau` reads (columns run, depth, width, tau, ...). Torch-free.
#include <string>
#include <vector>

namespace shapelaw::probe {

struct SummarizeOptions {
  long long step = -1;       // keep only fits at this step (-1: every fit)
  bool only_valid = false;   // drop rows without a finite positive tau (listed on stderr anyway)
};

struct SummaryTable {
  std::string csv;
  std::vector<std::string> files;     // grad_fit.json files read
  std::vector<std::string> warnings;  // rows without a usable tau, duplicates
  int rows = 0;
};

// inputs: grad_fit.json files or directories (searched recursively for grad_fit.json).
// Columns: run,depth,width,step,tau,tau_lo,tau_hi,r2,dcrit,dcrit_lo,dcrit_hi,n_points,component,flags
// (empty tau: no decay; tau_hi "inf": the decay is not significant at 95%).
SummaryTable summarize_fits(const std::vector<std::string>& inputs, const SummarizeOptions& options);

}  // namespace shapelaw::probe
