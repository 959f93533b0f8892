#pragma once
// Replicates: rows of one configuration (same D, W, N, T), e.g. one run under several
// seeds. Whatever spreads them apart (initialization, data order, arithmetic) no law of
// D, W, N, T can fit. Their within-configuration sum of squares is the "pure error", and
// the classical lack-of-fit test asks whether a law's residuals exceed it:
//   RSS = SS_pe + SS_lof,   F = (SS_lof / df_lof) / (SS_pe / df_pe),
//   df_pe = Σ_g (n_g − 1),  df_lof = n − k − df_pe.
// The split is exact for weighted least squares in the fitting space (replicates share
// one prediction); under the Huber objective the fit minimized something else and the F
// test is approximate.
#include <string>
#include <vector>

#include "fit/model.h"

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
// rss: the law's weighted residual sum of squares in the fitting space; k: free parameters.
LackOfFit lack_of_fit(double rss, int n, int k, const PureError& pe);

}  // namespace shapelaw::fit
