#pragma once
// When a run has diverged: a non-finite loss or gradient norm, or a train loss above
// `factor` x max(the run's first loss, ln vocab) (a model far worse than guessing
// uniformly; a healthy language-model run never comes near). Torch-free.
#include <cstdint>
#include <string>

namespace shapelaw {

struct DivergenceCheck {
  double limit = 0;  // loss above it: diverged (0: only non-finite values count)
  static DivergenceCheck for_run(double first_loss, int64_t vocab_size, double factor);
  // "" when the step is healthy, else why not ("loss 9.9e+09 above the divergence limit 8.3 (...)")
  std::string check(double loss, double grad_norm) const;
};

}  // namespace shapelaw
