// Unit tests of the fitting core: LM, objectives, model Jacobians, variable
// projection, planted-parameter recovery, compute-optimal numerics, statistics.
#include "catch.h"

#include <cmath>
#include <random>

#include "fit/fitter.h"
#include "fit/lm.h"
#include "fit/laws.h"
#include "fit/optimal.h"
#include "fit/replicates.h"
#include "fit/resample.h"
#include "fit/stats.h"

using namespace shapelaw::fit;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

double param(const Model& m, const VectorXd& p, const std::string& name) { return p[m.index_of(name)]; }

// Synthetic data from a model with multiplicative (log-normal) noise.
std::vector<Point> synth(const Model& m, const VectorXd& truth, std::vector<Point> xs, double sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  for (auto& x : xs) x.y = m.predict(x, truth) * std::exp(sigma * z(rng));
  return xs;
}

std::vector<Point> depth_width_grid(double T) {
  std::vector<Point> xs;
  for (double W : {256.0, 512.0, 1024.0, 2048.0})
    for (double D : {2.0, 4.0, 8.0, 12.0, 16.0, 24.0, 32.0, 48.0}) {
      Point x;
      x.D = D;
      x.W = W;
      x.N = 12 * D * W * W;
      x.T = T;
      xs.push_back(x);
    }
  return xs;
}

// Every (N, T) pair at a fixed shape (8 x 1024): the design of the Chinchilla-style tests.
std::vector<Point> n_by_t_grid(std::initializer_list<double> ns, std::initializer_list<double> ts) {
  std::vector<Point> xs;
  for (double N : ns)
    for (double T : ts) {
      Point x;
      x.N = N;
      x.T = T;
      x.D = 8;
      x.W = 1024;
      xs.push_back(x);
    }
  return xs;
}

VectorXd vec(std::initializer_list<double> v) {
  VectorXd out(v.size());
  int i = 0;
  for (double x : v) out[i++] = x;
  return out;
}

}  // namespace

TEST_CASE("LM solves Rosenbrock and an exponential-decay fit to machine precision") {
  Objective ls;
  ls.kind = Objective::LeastSquares;
  auto rosen = [](const VectorXd& p, VectorXd& r, MatrixXd* J) {
    r.resize(2);
    r << 10 * (p[1] - p[0] * p[0]), 1 - p[0];
    if (J) {
      J->resize(2, 2);
      *J << -20 * p[0], 10, -1, 0;
    }
    return true;
  };
  VectorXd inf = VectorXd::Constant(2, INFINITY);
  LMResult r = levenberg_marquardt(rosen, vec({-1.2, 1}), -inf, inf, ls);
  CHECK(r.converged);
  CHECK(r.p[0] == Approx(1).margin(1e-9));
  CHECK(r.p[1] == Approx(1).margin(1e-9));
  CHECK(r.objective < 1e-20);

  // y = 3 exp(-0.7 x), exact data: the fit must recover it from a poor start
  std::vector<double> xs;
  for (int i = 0; i < 20; ++i) xs.push_back(0.25 * i);
  auto expo = [&](const VectorXd& p, VectorXd& r, MatrixXd* J) {
    r.resize(xs.size());
    if (J) J->resize(xs.size(), 2);
    for (size_t i = 0; i < xs.size(); ++i) {
      double e = std::exp(-p[1] * xs[i]);
      r[i] = p[0] * e - 3 * std::exp(-0.7 * xs[i]);
      if (J) { (*J)(i, 0) = e; (*J)(i, 1) = -p[0] * xs[i] * e; }
    }
    return true;
  };
  LMResult e = levenberg_marquardt(expo, vec({1, 0.1}), -inf, inf, ls);
  CHECK(e.converged);
  CHECK(e.p[0] == Approx(3).epsilon(1e-10));
  CHECK(e.p[1] == Approx(0.7).epsilon(1e-10));
}

TEST_CASE("LM respects bounds and reports the active bound") {
  Objective ls;
  ls.kind = Objective::LeastSquares;
  auto f = [](const VectorXd& p, VectorXd& r, MatrixXd* J) {
    r = vec({p[0] - 2.0, p[1] + 1.0});
    if (J) *J = MatrixXd::Identity(2, 2);
    return true;
  };
  LMResult r = levenberg_marquardt(f, vec({0.5, 0.5}), vec({0, 0}), vec({1, 1}), ls);
  CHECK(r.p[0] == Approx(1));
  CHECK(r.p[1] == Approx(0));
  CHECK(r.converged);
}

TEST_CASE("Huber objective: quadratic inside delta, linear outside, IRLS weights") {
  Objective h;
  h.delta = 0.1;
  CHECK(h.rho(0.05) == Approx(0.5 * 0.05 * 0.05));
  CHECK(h.rho(-0.3) == Approx(0.1 * (0.3 - 0.05)));
  CHECK(h.psi(0.3) == Approx(0.1));
  CHECK(h.weight(0.4) == Approx(0.25));
  CHECK(h.weight(0.01) == 1);
  CHECK(h.total(vec({0.05, -0.3})) == Approx(0.00125 + 0.025));
}

TEST_CASE("every model's analytic Jacobian matches central finite differences") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (bool relative : {false, true})
    for (const auto& info : model_catalog())
      for (bool tv : {true, false}) {
        ModelOptions mo;
        mo.phi_relative = relative;
        mo.T_varies = tv;
        Model m = make_model(info.name, mo);
        INFO(m.name << " relative=" << relative << " T_varies=" << tv);
        for (int trial = 0; trial < 20; ++trial) {
          VectorXd p(m.n_params());
          for (int j = 0; j < m.n_lin(); ++j) p[j] = 0.5 + 2 * u(rng);
          for (int t = 0; t < m.n_nl(); ++t) {
            const std::string& nm = m.nl_names[t];
            p[m.n_lin() + t] = nm == "kappa" ? 1 + 2 * u(rng) : nm == "c" ? 0.5 + u(rng) : 0.1 + 0.6 * u(rng);
          }
          Point x;
          x.D = 20 + 40 * u(rng);  // beyond D_crit for these parameters: away from the kink
          x.W = 256 + 2000 * u(rng);
          x.N = 12 * x.D * x.W * x.W;
          x.T = 1e9 * (1 + 10 * u(rng));
          VectorXd grad;
          double f = m.predict_grad(x, p, grad);
          CHECK(f == Approx(m.predict(x, p)));
          for (int q = 0; q < m.n_params(); ++q) {
            double h = 1e-6 * std::max(1.0, std::abs(p[q]));
            VectorXd a = p, b = p;
            a[q] += h;
            b[q] -= h;
            double fd = (m.predict(x, a) - m.predict(x, b)) / (2 * h);
            INFO("param " << m.param_names()[q]);
            CHECK(grad[q] == Approx(fd).epsilon(1e-5).margin(1e-9 * std::max(1.0, std::abs(f))));
          }
        }
      }
}

TEST_CASE("variable-projection gradient equals the finite-difference gradient of the reduced objective") {
  Model m = make_model("chinchilla", {});
  VectorXd truth = vec({1.7, 400, 410, 0.34, 0.28});
  auto pts = synth(m, truth, n_by_t_grid({1e8, 3e8, 1e9, 3e9, 1e10}, {2e9, 6e9, 2e10, 6e10}), 0.01, 3);
  for (bool log_space : {false, true}) {
    FitOptions o;
    o.log_space = log_space;
    VectorXd th = vec({0.3, 0.25}), r, c;
    MatrixXd J;
    REQUIRE(varpro_residuals(m, pts, th, o, r, &J, &c));
    VectorXd grad = J.transpose() * r;
    for (int t = 0; t < 2; ++t) {
      double h = 1e-6;
      VectorXd a = th, b = th, ra, rb;
      a[t] += h;
      b[t] -= h;
      varpro_residuals(m, pts, a, o, ra, nullptr, nullptr);
      varpro_residuals(m, pts, b, o, rb, nullptr, nullptr);
      double fd = (0.5 * ra.squaredNorm() - 0.5 * rb.squaredNorm()) / (2 * h);
      CHECK(grad[t] == Approx(fd).epsilon(1e-4));
    }
  }
}

TEST_CASE("planted Chinchilla parameters are recovered within their confidence intervals") {
  Model m = make_model("chinchilla", {});
  VectorXd truth = vec({1.69, 406.4, 410.7, 0.34, 0.28});
  auto pts = synth(m, truth, n_by_t_grid({5e7, 1e8, 3e8, 1e9, 3e9, 1e10}, {1e9, 3e9, 1e10, 3e10, 1e11}), 0.003, 11);
  FitOptions o;
  o.objective.kind = Objective::LeastSquares;
  o.threads = 2;
  FitResult fr = fit_multistart(m, pts, o);
  REQUIRE(fr.converged);
  CHECK(fr.n_starts == 25);
  BootstrapResult br = bootstrap(m, pts, [&] {
    std::vector<int> g(pts.size());
    for (size_t i = 0; i < g.size(); ++i) g[i] = (int)i;
    return g;
  }(), fr, o, 200, 42);
  CHECK(br.draws.size() >= 190);
  for (int q = 0; q < m.n_params(); ++q) {
    INFO(m.param_names()[q] << " estimate " << fr.p[q] << " se " << fr.se[q] << " truth " << truth[q]);
    CHECK(std::abs(fr.p[q] - truth[q]) <= 3.5 * fr.se[q]);
    std::vector<double> v;
    for (const auto& d : br.draws) v.push_back(d[q]);
    double lo = percentile(v, 0.005), hi = percentile(v, 0.995);
    CHECK(lo <= truth[q]);
    CHECK(truth[q] <= hi);
  }
  CHECK(param(m, fr.p, "alpha") == Approx(0.34).margin(0.03));
  CHECK(param(m, fr.p, "beta") == Approx(0.28).margin(0.03));
}

TEST_CASE("planted paper-log parameters are recovered, and B and delta are not identifiable at constant T") {
  ModelOptions mo;
  mo.T_varies = false;
  Model m = make_model("paper-log", mo);
  // the capacity term in Box-Cox coordinates (T constant): s = A*alpha, L1 = A + B_T
  REQUIRE(m.param_names() == std::vector<std::string>{"s", "L1", "gamma", "alpha", "mu", "kappa"});
  CHECK(m.not_identifiable == std::vector<std::string>{"B", "delta"});
  VectorXd truth = vec({40 * 0.25, 40 + 1.5, 0.5, 0.25, 0.5, 2.5});  // A = 40, B_T = 1.5
  auto pts = synth(m, truth, depth_width_grid(6.4e9), 0.002, 5);
  for (auto kind : {Objective::LeastSquares, Objective::Huber}) {
    FitOptions o;
    o.objective.kind = kind;
    o.threads = 2;
    FitResult fr = fit_multistart(m, pts, o);
    INFO("objective " << o.objective.describe());
    CHECK(param(m, fr.p, "kappa") == Approx(2.5).margin(0.25));
    CHECK(param(m, fr.p, "gamma") == Approx(0.5).epsilon(0.5));
    CHECK(param(m, fr.p, "mu") == Approx(0.5).margin(0.15));
    CHECK(param(m, fr.p, "alpha") == Approx(0.25).margin(0.05));
    CHECK(m.dcrit(512, fr.p) == Approx(2.5 * std::log(512)).margin(1.5));
  }
}

TEST_CASE("gradient persistence: tau-power recovers the exponent, tau-log fits exactly") {
  Model m = make_model("tau-power", {});
  std::vector<Point> xs;
  for (double W : {256.0, 384.0, 512.0, 768.0, 1024.0, 1536.0}) {
    Point x;
    x.W = W;
    xs.push_back(x);
  }
  auto pts = synth(m, vec({2.06, 0.44}), xs, 0.01, 9);
  FitOptions o;
  FitResult fr = fit_multistart(m, pts, o);
  CHECK(param(m, fr.p, "a") == Approx(0.44).margin(0.03));
  Model lg = make_model("tau-log", {});
  auto exact = synth(lg, vec({5.79}), xs, 0, 1);
  FitResult fl = fit_multistart(lg, exact, o);
  CHECK(fl.p[0] == Approx(5.79).epsilon(1e-10));
  CHECK(fl.objective < 1e-20);
}

TEST_CASE("compute-optimal search reproduces the analytic Chinchilla exponents") {
  Model m = make_model("chinchilla", {});
  VectorXd p = vec({1.69, 406.4, 410.7, 0.34, 0.28});
  OptimalCurve c = compute_optimal(m, p, {});
  REQUIRE(c.available);
  CHECK(c.n_interior >= 10);
  CHECK(c.slope_N == Approx(0.28 / 0.62).margin(2e-3));  // N* ∝ C^{β/(α+β)}
  CHECK(c.slope_T == Approx(0.34 / 0.62).margin(2e-3));
  CHECK_FALSE(c.shape_unique);  // L depends on D and W only through N
}

TEST_CASE("compute-optimal under the paper ansatz: the deepest optimal depth sits at D_crit") {
  Model m = make_model("paper-log", {});
  // A, B, gamma, alpha, delta, mu, kappa
  VectorXd p = vec({406.4, 410.7, 0.5, 0.34, 0.28, 0.5, 2.5});
  OptimalCurve c = compute_optimal(m, p, {});
  REQUIRE(c.available);
  REQUIRE(c.points.size() > 3);
  for (const auto& pt : c.points) {
    if (pt.boundary) continue;
    double dcrit = 2.5 * std::log(pt.W_at_D_hi);
    CHECK(pt.D_hi <= dcrit * 1.13);  // within one grid step (log spacing 0.05 decades)
    CHECK(pt.D_hi >= dcrit / 1.13);
  }
  CHECK(c.slope_N == Approx(0.28 / 0.62).margin(5e-3));
}

TEST_CASE("statistics helpers: chi-square tail, percentiles, slopes") {
  CHECK(chi2_sf(3.841458820694124, 1) == Approx(0.05).epsilon(1e-8));
  CHECK(chi2_sf(7.814727903251178, 3) == Approx(0.05).epsilon(1e-8));
  CHECK(chi2_sf(30, 3) == Approx(1.3800570312932e-06).epsilon(1e-6));
  CHECK(chi2_sf(0, 2) == 1);
  CHECK(t975(13) == Approx(2.160368656).epsilon(1e-3));
  CHECK(t975(5) == Approx(2.570581836).epsilon(3e-3));
  CHECK(t975(1e9) == Approx(1.959963985).epsilon(1e-9));
  CHECK(percentile({3, 1, 2, 4}, 0.5) == Approx(2.5));
  CHECK(ols_slope({0, 1, 2}, {1, 3, 5}) == Approx(2));
  Metrics mt = compute_metrics({1, 2, 3}, {1, 2, 3}, 0, 0, 1);
  CHECK(mt.r2 == 1);
}

TEST_CASE("F distribution tail and incomplete beta against closed forms and tables") {
  CHECK(beta_inc(1, 1, 0.3) == Approx(0.3).epsilon(1e-12));
  CHECK(beta_inc(2.5, 1, 0.4) == Approx(std::pow(0.4, 2.5)).epsilon(1e-12));
  CHECK(beta_inc(3, 4, 0.35) + beta_inc(4, 3, 0.65) == Approx(1).epsilon(1e-12));
  for (double d2 : {1.0, 3.0, 10.0, 57.0})  // F(2, d2): sf(f) = (1 + 2f/d2)^(-d2/2)
    for (double f : {0.1, 1.0, 4.0, 30.0})
      CHECK(f_sf(f, 2, d2) == Approx(std::pow(1 + 2 * f / d2, -d2 / 2)).epsilon(1e-10));
  CHECK(f_sf(4.102821015, 2, 10) == Approx(0.05).epsilon(1e-8));  // table 95% points
  CHECK(f_sf(3.098391212, 3, 20) == Approx(0.05).epsilon(1e-8));
  CHECK(f_sf(5.064343, 5, 12) == Approx(0.01).epsilon(1e-5));
  CHECK(f_sf(1, 7, 7) == Approx(0.5).epsilon(1e-12));
  CHECK(f_sf(0, 3, 4) == 1);
}

TEST_CASE("pure error of replicates and the lack-of-fit split, by hand") {
  // configurations A: y 1, 3; B: y 2, 2, 5; C: y 4 alone
  std::vector<Point> pts;
  auto add = [&](double D, double y) { Point p; p.D = D; p.W = 64; p.N = 1e6 * D; p.T = 1e8; p.y = y; pts.push_back(p); };
  add(1, 1); add(1, 3); add(2, 2); add(2, 2); add(2, 5); add(4, 4);
  PureError pe = pure_error(pts, /*log_space=*/false);
  CHECK(pe.configurations == 2);
  CHECK(pe.rows == 5);
  CHECK(pe.df == 3);
  CHECK(pe.ss == Approx(8));
  CHECK(pe.sd_response == Approx(std::sqrt(8.0 / 3)));
  LackOfFit lof = lack_of_fit(/*rss=*/20, /*n=*/6, /*k=*/2, pe);
  REQUIRE(lof.computed);
  CHECK(lof.df_lof == 1);
  CHECK(lof.ss_lof == Approx(12));
  CHECK(lof.f == Approx(4.5));
  CHECK(lof.p_value == Approx(f_sf(4.5, 1, 3)));
  // in log space the split is of ln y, weighted like the fit
  pts[0].weight = 3;
  PureError lg = pure_error(pts, /*log_space=*/true);
  const double zbar = (3 * std::log(1.0) + std::log(3.0)) / 4;
  const double zb = (2 * std::log(2.0) + std::log(5.0)) / 3;
  CHECK(lg.ss == Approx(3 * zbar * zbar + std::pow(std::log(3.0) - zbar, 2) + 2 * std::pow(std::log(2.0) - zb, 2) +
                        std::pow(std::log(5.0) - zb, 2)));
  CHECK(lg.sd_response == Approx(std::sqrt(8.0 / 3)));  // the response's own spread is unweighted
  // nothing to test against
  CHECK_FALSE(lack_of_fit(1, 6, 2, pure_error({pts[0], pts[2], pts[5]}, false)).computed);
  CHECK_FALSE(lack_of_fit(20, 6, 3, pe).computed);  // df_lof = 0: as many parameters as configurations
}

TEST_CASE("bootstrap draws do not depend on the number of threads") {
  Model m = make_model("kaplan-E", {});
  std::vector<Point> xs;
  for (double N : {1e7, 3e7, 1e8, 3e8, 1e9, 3e9, 1e10, 3e10}) {
    Point x;
    x.N = N;
    xs.push_back(x);
  }
  auto pts = synth(m, vec({1.8, 30, 0.2}), xs, 0.01, 2);
  std::vector<int> groups = {0, 1, 2, 3, 4, 5, 6, 7};
  FitOptions o1, o2;
  o1.threads = 1;
  o2.threads = 2;
  FitResult fr = fit_multistart(m, pts, o1);
  auto a = bootstrap(m, pts, groups, fr, o1, 30, 42);
  auto b = bootstrap(m, pts, groups, fr, o2, 30, 42);
  auto c = bootstrap(m, pts, groups, fr, o1, 30, 43);
  REQUIRE(a.draws.size() == b.draws.size());
  for (size_t i = 0; i < a.draws.size(); ++i) {
    INFO("draw " << i);
    CHECK(a.draws[i] == b.draws[i]);
  }
  CHECK_FALSE(a.draws[0] == c.draws[0]);
}

TEST_CASE("Jacobian and bootstrap 95% CIs reach their stated coverage on planted data") {
  Model m = make_model("kaplan-E", {});
  VectorXd truth = vec({1.8, 30, 0.2});
  std::vector<Point> xs;
  for (int i = 0; i < 16; ++i) {
    Point x;
    x.N = 1e7 * std::pow(10.0, i * 3.5 / 15);
    xs.push_back(x);
  }
  std::vector<int> groups(xs.size());
  for (size_t i = 0; i < groups.size(); ++i) groups[i] = (int)i;
  FitOptions o;
  o.objective.kind = Objective::LeastSquares;
  o.threads = 2;
  const int reps = 120, boot_reps = 30;
  // half_cover: the same interval at half its width, ~67% nominal; an SE inflated twofold
  // would still cover ~95% at half width, so this bounds the CIs from above
  int jac_cover[3] = {0, 0, 0}, half_cover[3] = {0, 0, 0}, boot_cover = 0;
  for (int rep = 0; rep < reps; ++rep) {
    auto pts = synth(m, truth, xs, 0.01, 1000 + rep);
    FitResult fr = fit_multistart(m, pts, o);
    for (int q = 0; q < 3; ++q)
      if (std::abs(fr.p[q] - truth[q]) <= t975(16 - 3) * fr.se[q]) ++jac_cover[q];
    for (int q = 0; q < 3; ++q)
      if (std::abs(fr.p[q] - truth[q]) <= 0.5 * t975(16 - 3) * fr.se[q]) ++half_cover[q];
    if (rep < boot_reps) {
      auto br = bootstrap(m, pts, groups, fr, o, 100, rep);
      std::vector<double> v;
      for (const auto& d : br.draws) v.push_back(d[2]);
      if (percentile(v, 0.025) <= truth[2] && truth[2] <= percentile(v, 0.975)) ++boot_cover;
    }
  }
  for (int q = 0; q < 3; ++q) {
    INFO(m.param_names()[q] << ": Jacobian CI covered the truth in " << jac_cover[q] << " of " << reps
                            << ", at half width in " << half_cover[q]);
    CHECK(jac_cover[q] >= 0.88 * reps);  // nominal 95%; binomial sd 2%
    CHECK(half_cover[q] <= 0.82 * reps);  // nominal ~67%; binomial sd 4%
  }
  INFO("bootstrap CI of alpha covered the truth in " << boot_cover << " of " << boot_reps);
  CHECK(boot_cover >= 0.8 * boot_reps);
}

#include "fit/profile.h"

TEST_CASE("profile-likelihood interval: close to the Jacobian interval on a smooth problem, open at a bound") {
  Model m = make_model("tau-power", {});
  std::vector<Point> xs;
  for (double W : {128.0, 256.0, 384.0, 512.0, 768.0, 1024.0, 1536.0, 2048.0}) {
    Point x;
    x.W = W;
    xs.push_back(x);
  }
  auto pts = synth(m, vec({2.06, 0.44}), xs, 0.02, 21);
  FitOptions o;
  o.objective.kind = Objective::LeastSquares;
  FitResult fr = fit_multistart(m, pts, o);
  ProfileInterval pi = profile_interval(m, pts, fr, 1, o);
  REQUIRE(pi.computed);
  CHECK_FALSE(pi.lo_at_bound);
  CHECK_FALSE(pi.hi_at_bound);
  CHECK(pi.lo < fr.p[1]);
  CHECK(fr.p[1] < pi.hi);
  CHECK(pi.lo <= 0.44);
  CHECK(0.44 <= pi.hi);
  // the likelihood-ratio interval uses χ²₁ (z = 1.96), the Jacobian one uses s² and t: similar widths
  double jac_half = 1.959963984540054 * fr.se[1];
  CHECK((pi.hi - pi.lo) / 2 == Approx(jac_half).epsilon(0.35));
  CHECK(profile_interval(m, pts, fr, 0, o).computed == false);  // linear coefficients are not profiled
}
