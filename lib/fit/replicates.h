#pragma once
// Replicates: rows of one configuration (same D, W, N, T), e.g. one run under several
// seeds. Whatever spreads them apart (initialization, data order, arithmetic) no law of
// D, W, N, T can fit. Their within-configuration sum of squares is the "pure error", and
// the classical lack-of-fit test asks whether a law's residuals exceed it:
//   RSS = SS_pe + SS_lof,   F = (SS_lof / df_lof) / (SS_pe / df_pe),
//   df_pe = Σ_g (n_g − 1),  df_lof = n − k − df_pe.
// The split holds exactly in the fitting space, whatever the fit minimized, because
// replicates share one prediction; the F distribution is exact for least squares with
// Gaussian noise, approximate under the Huber objective.
#include <string>
#include <vector>

#include "fit/laws.h"

namespace shapelaw::fit {

struct PureError {
  int configurations = 0;  // configurations with two or more rows
  int rows = 0;            // rows in those configurations
  int df = 0;              // Σ (n_g − 1)
  double ss = 0;           // in the fitting space (log or loss), weighted like the fit
  double sd_fit_space = 0; // sqrt(ss / df)
  double sd_response = 0;  // pooled within-configuration SD of the response itself (nats for loss)
};
PureError pure_error(const std::vector<Point>& pts, bool log_space);

struct LackOfFit {
  bool computed = false;
  std::string reason;  // when not computed
  double ss_lof = 0, f = 0, p_value = 1;
  int df_lof = 0, df_pe = 0;
};
// rss: the law's weighted residual sum of squares in the fitting space; k: free parameters
// (those pinned at a bound excluded).
LackOfFit lack_of_fit(double rss, int n, int k, const PureError& pe);

}  // namespace shapelaw::fit
