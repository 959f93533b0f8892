// The paper family's capacity term in Box-Cox coordinates (issue 23 §1): where the law has a
// constant, A/N^alpha + C = L1 + s*(N^-alpha - 1)/alpha, smooth through alpha = 0, where the
// paper's coordinates run off to A -> ±inf along a ridge the joint LM crawled on for >1000
// iterations and could not cross (alpha < 0 from alpha > 0).
#include "catch.h"

#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "fit/fitter.h"
#include "fit/laws.h"
#include "test_support.h"

using namespace shapelaw;
using namespace shapelaw::fit;
using Eigen::VectorXd;
using nlohmann::json;

namespace {

double param(const Model& m, const VectorXd& p, const std::string& name) {
  const int q = m.index_of(name);
  REQUIRE(q >= 0);
  return p[q];
}

double derived(const Model& m, const VectorXd& p, const std::string& name) {
  for (const auto& [n, fn] : m.derived)
    if (n == name) return fn(p);
  FAIL("no derived quantity " << name << " in " << m.name);
  return 0;
}

// A micro-study-like grid (D 1-32 x W 16-128, N = 12*D*W^2, one token count), losses from
// L = L1 + s*(N^-alpha - 1)/alpha + gamma*max(0, D - kappa*ln W)/W^mu with 0.2% log-normal noise.
struct Planted {
  double s, L1, alpha, gamma = 0.2, mu = 0.5, kappa = 2;
};
std::vector<Point> planted_points(const Planted& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<Point> pts;
  for (double W : {16.0, 32.0, 64.0, 128.0})
    for (double D : {1.0, 2.0, 4.0, 8.0, 16.0, 32.0}) {
      Point x;
      x.D = D;
      x.W = W;
      x.N = 12 * D * W * W;
      x.T = 1179648;
      const double phi = t.gamma * std::max(0.0, D - t.kappa * std::log(W)) / std::pow(W, t.mu);
      x.y = (t.L1 + t.s * box_cox(std::log(x.N), t.alpha, nullptr) + phi) * std::exp(0.002 * z(rng));
      pts.push_back(x);
    }
  return pts;
}

std::string csv_of(const std::vector<Point>& pts) {
  std::string body = "depth,width,params_nonembedding,tokens,loss\n";
  char line[200];
  for (const auto& x : pts) {
    std::snprintf(line, sizeof line, "%g,%g,%.17g,%.17g,%.17g\n", x.D, x.W, x.N, x.T, x.y);
    body += line;
  }
  return body;
}

ModelOptions constant_T() {
  ModelOptions mo;
  mo.T_varies = false;
  return mo;
}

}  // namespace

TEST_CASE("box_cox: (N^-alpha - 1)/alpha and its alpha-derivative, through alpha = 0 without cancellation") {
  for (double N : {3072.0, 1e6, 6.4e9}) {
    const double lnN = std::log(N);
    INFO("N " << N);
    // the plain form where it is well conditioned
    double d = 0;
    const double v = box_cox(lnN, 0.3, &d);
    CHECK(v == Approx((std::pow(N, -0.3) - 1) / 0.3).epsilon(1e-13));
    // d/dalpha of (N^-a - 1)/a = (-ln N * N^-a * a - (N^-a - 1))/a^2
    CHECK(d == Approx((-lnN * std::pow(N, -0.3) * 0.3 - (std::pow(N, -0.3) - 1)) / 0.09).epsilon(1e-12));
    // central differences at alpha on both sides of the series/closed-form switch (|u| = 0.1)
    for (double alpha : {0.3, -0.2, 0.1 / lnN * 0.999, 0.1 / lnN * 1.001, 1e-3, -1e-3, 1e-6}) {
      INFO("alpha " << alpha);
      const double h = 1e-6;
      double da = 0;
      box_cox(lnN, alpha, &da);
      const double fd = (box_cox(lnN, alpha + h, nullptr) - box_cox(lnN, alpha - h, nullptr)) / (2 * h);
      CHECK(da == Approx(fd).epsilon(1e-7));
    }
    // the limit: -ln N at alpha = 0 and a hair either side, derivative ln²N/2, no NaN
    for (double alpha : {0.0, 1e-9, -1e-9}) {
      INFO("alpha " << alpha);
      double da = NAN;
      const double at = box_cox(lnN, alpha, &da);
      REQUIRE(std::isfinite(at));
      REQUIRE(std::isfinite(da));
      CHECK(at == Approx(-lnN).epsilon(1e-7));
      CHECK(da == Approx(lnN * lnN / 2).epsilon(1e-7));
    }
    double d0 = 0;
    CHECK(box_cox(lnN, 0.0, &d0) == -lnN);
    CHECK(d0 == Approx(lnN * lnN / 2).epsilon(1e-15));
  }
}

TEST_CASE("the paper family is Box-Cox'd exactly where it has a constant, and keeps the paper's terms") {
  const Model pl = make_model("paper-log", constant_T());
  CHECK(pl.box_cox);
  CHECK(pl.param_names() == std::vector<std::string>{"s", "L1", "gamma", "alpha", "mu", "kappa"});
  CHECK(make_model("paper-log-E", constant_T()).param_names() ==
        std::vector<std::string>{"s", "gamma", "L1", "alpha", "mu", "kappa"});
  CHECK(make_model("no-phi", constant_T()).param_names() == std::vector<std::string>{"s", "L1", "alpha"});
  // with T varying only paper-log-E has a constant (E)
  CHECK_FALSE(make_model("paper-log", {}).box_cox);
  CHECK(make_model("paper-log", {}).param_names() ==
        std::vector<std::string>{"A", "B", "gamma", "alpha", "delta", "mu", "kappa"});
  CHECK(make_model("paper-log-E", {}).param_names() ==
        std::vector<std::string>{"s", "B", "gamma", "L1", "alpha", "delta", "mu", "kappa"});
  // the function family is the same whatever the coordinates: the equivalences hold
  CHECK(make_model("paper-log", constant_T()).equivalence_key() ==
        make_model("paper-log-E", constant_T()).equivalence_key());
  CHECK(make_model("no-phi", constant_T()).equivalence_key() == make_model("kaplan-E", constant_T()).equivalence_key());
  CHECK(make_model("no-phi", constant_T()).equivalence_key() ==
        make_model("chinchilla", constant_T()).equivalence_key());
  ModelOptions plain = constant_T();
  plain.box_cox = false;
  CHECK(make_model("paper-log", plain).equivalence_key() == pl.equivalence_key());
  // a held A or B_T is a value in the paper's coordinates: the law is built in them
  ModelOptions held = constant_T();
  held.held = {"B_T"};
  CHECK(make_model("paper-log", held).param_names() ==
        std::vector<std::string>{"A", "B_T", "gamma", "alpha", "mu", "kappa"});
  held.held = {"alpha", "kappa"};
  CHECK(make_model("paper-log", held).box_cox);
}

TEST_CASE("nested starts carry kaplan's optimum into Box-Cox coordinates and back, the same function") {
  const Model kaplan = make_model("kaplan", constant_T()), no_phi = make_model("no-phi", constant_T());
  ModelOptions plain_o = constant_T();
  plain_o.box_cox = false;
  const Model plain = make_model("no-phi", plain_o), pl = make_model("paper-log", constant_T());
  VectorXd pk(2);
  pk << 12.0, 0.3;  // A, alpha
  VectorXd start;
  REQUIRE(nested_start(kaplan, pk, no_phi, start));
  CHECK(param(no_phi, start, "s") == Approx(12.0 * 0.3));
  CHECK(param(no_phi, start, "L1") == Approx(12.0));  // kaplan has no constant: C = 0
  VectorXd back;
  REQUIRE(nested_start(no_phi, start, plain, back));
  CHECK(param(plain, back, "A") == Approx(12.0));
  CHECK(param(plain, back, "B_T") == Approx(0).margin(1e-12));
  VectorXd full;
  REQUIRE(nested_start(no_phi, start, pl, full));  // by name: gamma 0, mu and kappa 0 (set by the grid)
  CHECK(param(pl, full, "gamma") == 0);
  Point x;
  x.D = 4;
  x.W = 32;
  x.T = 1e6;
  for (double N : {3e3, 1e5, 1e7}) {
    x.N = N;
    CHECK(no_phi.predict(x, start) == Approx(kaplan.predict(x, pk)).epsilon(1e-12));
    CHECK(plain.predict(x, back) == Approx(kaplan.predict(x, pk)).epsilon(1e-12));
  }
  // alpha exactly 0 has no paper coordinates; a law without the names is not nested
  VectorXd flat = start;
  flat[no_phi.index_of("alpha")] = 0;
  CHECK_FALSE(nested_start(no_phi, flat, plain, back));
  CHECK_FALSE(nested_start(pl, VectorXd::Ones(pl.n_params()), no_phi, back));
}

TEST_CASE("derived A and B_T are s/alpha and L1 - s/alpha, and the fit equals the paper coordinates' fit") {
  const Planted truth{0.3 * 30, 30 + 2.0, 0.3};  // A = 30, B_T = 2
  const auto pts = planted_points(truth, 11);
  const Model bc = make_model("paper-log", constant_T());
  ModelOptions plain_o = constant_T();
  plain_o.box_cox = false;
  const Model plain = make_model("paper-log", plain_o);
  FitOptions o;
  o.threads = 2;
  const FitResult a = fit_multistart(bc, pts, o), b = fit_multistart(plain, pts, o);
  REQUIRE(a.converged);
  REQUIRE(b.converged);
  CHECK(a.objective == Approx(b.objective).epsilon(1e-9));
  const double s = param(bc, a.p, "s"), L1 = param(bc, a.p, "L1"), alpha = param(bc, a.p, "alpha");
  CHECK(derived(bc, a.p, "A") == s / alpha);
  CHECK(derived(bc, a.p, "B_T") == L1 - s / alpha);
  CHECK(derived(bc, a.p, "A") == Approx(param(plain, b.p, "A")).epsilon(1e-5));
  CHECK(derived(bc, a.p, "B_T") == Approx(param(plain, b.p, "B_T")).epsilon(1e-5));
  CHECK(alpha == Approx(param(plain, b.p, "alpha")).epsilon(1e-6));
  CHECK(alpha == Approx(0.3).margin(0.05));
  CHECK(derived(bc, a.p, "A") == Approx(30).epsilon(0.3));
}

TEST_CASE("on the ridge (alpha = 0 and alpha < 0) the Box-Cox fit converges and recovers the planted law") {
  for (double alpha : {0.0, -0.03}) {
    INFO("planted alpha " << alpha);
    const Planted truth{0.15, 6.0, alpha};
    const auto pts = planted_points(truth, 5);
    const Model m = make_model("paper-log", constant_T());
    FitOptions o;
    o.threads = 2;
    const FitResult fr = fit_multistart(m, pts, o);
    CHECK(fr.converged);
    CHECK(fr.status != "iteration limit");
    CHECK(param(m, fr.p, "alpha") == Approx(alpha).margin(0.02));
    CHECK(param(m, fr.p, "s") == Approx(truth.s).epsilon(0.15));
    CHECK(param(m, fr.p, "L1") == Approx(truth.L1).epsilon(0.03));
    CHECK(param(m, fr.p, "kappa") == Approx(truth.kappa).margin(0.5));
    CHECK(param(m, fr.p, "gamma") == Approx(truth.gamma).epsilon(0.3));

    // through fit-law: paper-log against no-phi, neither flagged for non-convergence
    test::TempDir dir;
    test::write_text(dir.path() + "/ridge.csv", csv_of(pts));
    auto r = test::run(test::bin("fit-law") + " " + dir.path() + "/ridge.csv -m paper-log,no-phi,kaplan -B 20 --no-loo " +
                       "--no-profile -o " + dir.path() + "/fit.json --format table");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, !Catch::Contains("did not converge"));
    const json fit = json::parse(test::read_text(dir.path() + "/fit.json"));
    bool tested = false;
    for (const auto& t : fit["comparison"]["likelihood_ratio"])
      if (t["full"] == "paper-log" && t["reduced"] == "no-phi") {
        tested = true;
        CHECK(t["converged"]["full"] == true);
        CHECK(t["converged"]["reduced"] == true);
        CHECK_FALSE(t.contains("warning"));
      }
    CHECK(tested);
    for (const auto& mj : fit["models"]) {
      INFO(mj["name"]);
      CHECK(mj["fit"]["converged"] == true);
      if (mj["name"] == "paper-log") {
        // A = s/alpha is flagged where alpha ~ 0 (null at exactly 0)
        const double fitted = mj["params"]["alpha"]["estimate"].get<double>();
        CHECK(mj["derived"]["A"]["alpha_near_zero"] == (std::abs(fitted) <= kFlatAlpha));
        CHECK(mj["derived"].contains("B_T"));
        CHECK(mj["params"].contains("s"));
      }
    }
  }
}

TEST_CASE("a Box-Cox law with A and B_T held by --fix falls back to the paper's coordinates") {
  const Planted truth{0.3 * 30, 30 + 2.0, 0.3};
  test::TempDir dir;
  test::write_text(dir.path() + "/t.csv", csv_of(planted_points(truth, 3)));
  auto r = test::run(test::bin("fit-law") + " " + dir.path() + "/t.csv -m paper-log --fix A=30 --fix B_T=2 -B 0 " +
                     "--no-loo --no-profile -o " + dir.path() + "/fit.json --format table");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json fit = json::parse(test::read_text(dir.path() + "/fit.json"));
  const json& m = fit["models"][0];
  CHECK(m["param_names"] == json({"A", "B_T", "gamma", "alpha", "mu", "kappa"}));
  CHECK(m["params"]["A"]["fixed"] == true);
  CHECK(m["params"]["A"]["estimate"] == 30.0);
  CHECK(m["params"]["alpha"]["estimate"].get<double>() == Approx(0.3).margin(0.02));
  // holding the slope instead keeps the Box-Cox coordinates
  r = test::run(test::bin("fit-law") + " " + dir.path() + "/t.csv -m paper-log --fix s=9 -B 0 --no-loo --no-profile -o " +
                dir.path() + "/s.json --format table");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json held = json::parse(test::read_text(dir.path() + "/s.json"));
  CHECK(held["models"][0]["params"]["s"]["fixed"] == true);
}
