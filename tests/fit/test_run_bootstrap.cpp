// Why the checkpoints of one training run are resampled together: a simulation of sweeps
// whose runs each carry their own offset from the law (seed, data order, schedule and
// everything else a run shares across its checkpoints). The rows of a run are then not
// independent, and a bootstrap that resamples rows gives intervals that are far too
// narrow; resampling whole runs (fit::bootstrap with one group id per run) covers.
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fit/fitter.h"
#include "fit/laws.h"
#include "fit/parallel.h"
#include "fit/resample.h"
#include "fit/stats.h"

using namespace shapelaw::fit;
using Eigen::VectorXd;

namespace {

// A standard normal deviate by Box–Muller from two 53-bit uniforms of the generator's own
// output: std::normal_distribution's algorithm is not specified, so it gives other numbers
// with another standard library, and these sweeps must be the same on every platform.
double standard_normal(std::mt19937_64& rng) {
  const double ulp = 1.0 / 9007199254740992.0;  // 2^-53
  double u1 = (double)((rng() >> 11) + 1) * ulp;  // (0, 1]: log(u1) is finite
  double u2 = (double)(rng() >> 11) * ulp;        // [0, 1)
  return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

struct Interval {
  double lo = 0, hi = 0;
  bool covers(double truth) const { return lo <= truth && truth <= hi; }
  double width() const { return hi - lo; }
};

// The 95% percentile interval of quantity(draw) over the bootstrap draws.
template <class F>
Interval percentile_ci(const BootstrapResult& br, F quantity) {
  std::vector<double> v;
  for (const auto& p : br.draws) v.push_back(quantity(p));
  return {percentile(v, 0.025), percentile(v, 0.975)};
}

}  // namespace

// The design, and why the claims hold for (almost) any seed rather than by luck of this one:
//
// - Law: Chinchilla's L = E + A/N^alpha + B/T^beta at its published values. Runs: 10 widths
//   (128..3072) x 4 depths (3, 5, 8, 13), N = 12*D*W^2 (all 40 distinct, 5.9e5..1.5e9), each
//   logged at the same M = 5 log-spaced token counts 1e9..1e11. Loss = law(N, T) *
//   exp(u_run + e_row), u_run ~ N(0, 0.02) shared by a run's rows, e_row ~ N(0, 0.003)
//   independent. Least squares in log space (the noise is Gaussian there).
// - Quantity: alpha, the exponent of N. A run has one N, so all the information on alpha is
//   between runs and its error is driven by the 40 run offsets. The row bootstrap treats
//   200 rows whose residuals share their run's offset (intra-run correlation
//   rho = 0.02^2/(0.02^2 + 0.003^2) = 0.98) as independent: its variance is short by about
//   the design effect 1 + (M-1)*rho = 4.9, its interval about 2.2x too narrow, and its
//   nominal 95% covers about P(|Z| < 1.96/2.2) ~ 60% (more checkpoints per run, as published
//   runs have, only make that worse). Below 0.85 is then a margin of ~9 binomial SDs.
// - The run bootstrap is a percentile bootstrap over K clusters: it undercovers by the
//   small-sample factors (about (K-3)/K in variance and a t_(K-3) tail). With K = 20-24
//   runs it covered 0.89-0.925 in trial runs (true coverage ~0.91: too close to 0.90 to
//   assert); with K = 40 and B = 199 (enough draws that the percentile endpoints are not
//   noisy themselves) 0.915-0.955 over four sets of 200 sweeps, 0.935 over all 800. With
//   300 sweeps (binomial SD 0.014) 0.90 is 2.5 SDs below that, 0.98 more than 3 above.
// - Also reported: the loss predicted at a shape no run has (W = 640, D = 10, T = 1e10).
//   It mixes between-run information (N) with within-run information (T), and the row
//   bootstrap overstates the latter: reshuffled rows carry their runs' offsets into the T
//   direction (its interval of beta came out ~6x too wide in trial runs). Its shortfall
//   there is smaller (~0.73 vs ~0.93 in trial runs); only the ordering is asserted for it.
//
// With this seed: alpha covered 0.577 (row) vs 0.933 (run), mean widths 0.0228 vs 0.0559;
// the prediction 0.683 vs 0.933. Cost: ~53 s of CPU in a Release build, spread over the cores.
//
// Each sweep is generated, fitted and bootstrapped from its own seed on one thread, the
// sweeps spread over the cores (parallel_for): the numbers do not depend on the thread
// count (checked on the first sweep below with the fit's own threads).
TEST_CASE("run bootstrap: on synthetic sweeps with a per-run offset the run bootstrap's 95% CI of the N exponent "
          "covers the truth 90-98% of the time and the row bootstrap's far less often") {
  const int n_sweeps = 300, B = 199, M = 5;
  const double s_run = 0.02, s_row = 0.003;
  Model m = make_model("chinchilla", {});
  REQUIRE(m.param_names() == std::vector<std::string>{"E", "A", "B", "alpha", "beta"});
  // 4 starts instead of the registry's 5 x 5 grid of (alpha, beta): on these sweeps they
  // reached the 25-start optimum in trial runs (same objective to 9 digits, parameters to
  // 3e-7), and the full fit then costs little beside its 2 x 199 refits (which start from
  // its optimum).
  m.nl_grid = {{0.25, 0.75}, {0.25, 0.75}};
  VectorXd truth(5);
  truth << 1.69, 406.4, 410.7, 0.34, 0.28;
  const int ia = m.index_of("alpha");

  std::vector<Point> shapes;
  for (double W : {128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 1536.0, 2048.0, 3072.0})
    for (double D : {3.0, 5.0, 8.0, 13.0}) {
      Point x;
      x.W = W;
      x.D = D;
      x.N = 12 * D * W * W;
      shapes.push_back(x);
    }
  const int K = (int)shapes.size();
  std::vector<double> tokens;
  for (int j = 0; j < M; ++j) tokens.push_back(1e9 * std::pow(100.0, j / double(M - 1)));
  Point unseen;
  unseen.W = 640;
  unseen.D = 10;
  unseen.N = 12 * unseen.D * unseen.W * unseen.W;
  unseen.T = 1e10;
  const double truth_alpha = truth[ia], truth_pred = m.predict(unseen, truth);

  std::vector<int> run_groups, row_groups;
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < M; ++j) {
      run_groups.push_back(k);
      row_groups.push_back((int)row_groups.size());
    }

  struct Sweep {
    bool converged = false;
    size_t draws[2] = {0, 0};  // [row, run]
    Interval alpha[2], pred[2];
  };
  auto simulate = [&](int s, int threads) {
    std::mt19937_64 rng(splitmix64(0x72756e2d626f6f74ULL ^ splitmix64((uint64_t)s + 1)));
    std::vector<Point> pts;
    for (int k = 0; k < K; ++k) {
      double u = s_run * standard_normal(rng);
      for (double T : tokens) {
        Point x = shapes[k];
        x.T = T;
        x.y = m.predict(x, truth) * std::exp(u + s_row * standard_normal(rng));
        pts.push_back(x);
      }
    }
    FitOptions o;
    o.objective.kind = Objective::LeastSquares;
    o.threads = threads;
    FitResult fr = fit_multistart(m, pts, o);
    Sweep out;
    out.converged = fr.converged;
    for (int g = 0; g < 2; ++g) {
      BootstrapResult br = bootstrap(m, pts, g == 0 ? row_groups : run_groups, fr, o, B, 1000 + (uint64_t)s);
      out.draws[g] = br.draws.size();
      out.alpha[g] = percentile_ci(br, [&](const VectorXd& p) { return p[ia]; });
      out.pred[g] = percentile_ci(br, [&](const VectorXd& p) { return m.predict(unseen, p); });
    }
    return out;
  };

  std::vector<Sweep> sweeps(n_sweeps);
  parallel_for(n_sweeps, 0, [&](size_t s) { sweeps[s] = simulate((int)s, 1); });

  {  // the first sweep again, the fit and the bootstrap on two threads: the same intervals
    Sweep again = simulate(0, 2);
    for (int g = 0; g < 2; ++g) {
      CHECK(again.alpha[g].lo == sweeps[0].alpha[g].lo);
      CHECK(again.alpha[g].hi == sweeps[0].alpha[g].hi);
      CHECK(again.pred[g].lo == sweeps[0].pred[g].lo);
      CHECK(again.pred[g].hi == sweeps[0].pred[g].hi);
    }
  }

  int converged = 0, covered_alpha[2] = {0, 0}, covered_pred[2] = {0, 0};
  size_t min_draws = B;
  double width_alpha[2] = {0, 0}, width_pred[2] = {0, 0};
  for (const Sweep& sw : sweeps) {
    converged += sw.converged;
    for (int g = 0; g < 2; ++g) {
      min_draws = std::min(min_draws, sw.draws[g]);
      covered_alpha[g] += sw.alpha[g].covers(truth_alpha);
      covered_pred[g] += sw.pred[g].covers(truth_pred);
      width_alpha[g] += sw.alpha[g].width() / n_sweeps;
      width_pred[g] += sw.pred[g].width() / n_sweeps;
    }
  }
  const double cover_alpha[2] = {covered_alpha[0] / double(n_sweeps), covered_alpha[1] / double(n_sweeps)};
  const double cover_pred[2] = {covered_pred[0] / double(n_sweeps), covered_pred[1] / double(n_sweeps)};
  std::ostringstream line;
  line << std::fixed << std::setprecision(3) << "run bootstrap simulation: " << n_sweeps << " sweeps of " << K
       << " runs x " << M << " checkpoints, B = " << B << ", 95% percentile CI coverage row vs run bootstrap: alpha "
       << cover_alpha[0] << " vs " << cover_alpha[1] << " (mean width " << std::setprecision(4) << width_alpha[0]
       << " vs " << width_alpha[1] << "), loss at an unseen shape " << std::setprecision(3) << cover_pred[0]
       << " vs " << cover_pred[1] << " (mean width " << std::setprecision(4) << width_pred[0] << " vs "
       << width_pred[1] << ")";
  std::cout << line.str() << std::endl;
  INFO(line.str());
  CHECK(converged == n_sweeps);
  CHECK(min_draws >= size_t(B - 2));  // a failed refit would drop a draw
  CHECK(covered_alpha[1] >= 0.90 * n_sweeps);
  CHECK(covered_alpha[1] <= 0.98 * n_sweeps);
  CHECK(covered_alpha[0] < 0.85 * n_sweeps);
  CHECK(covered_alpha[0] <= covered_alpha[1] - 0.10 * n_sweeps);
  CHECK(covered_pred[0] <= covered_pred[1] - 0.10 * n_sweeps);
}
