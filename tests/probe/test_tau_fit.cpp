// The torch-free half of probe-grads: the decay fit (planted tau recovered from noisy
// synthetic profiles, CI coverage, flags), profile files, and the tau table's round
// trip through fit-law's tau-power / tau-log models.
#include "catch.h"

#include <cmath>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "probe/profile.h"
#include "probe/summarize.h"
#include "probe/tau_fit.h"
#include "test_support.h"
#include "util/atomic_file.h"
#include "util/error.h"

using namespace shapelaw;
using namespace shapelaw::probe;
using namespace shapelaw::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

// norms_l = A exp(-(D-1-l)/tau) * exp(N(0, sigma)), with se = sigma * norm (the truth)
void planted(int D, double tau, double sigma, std::mt19937_64& rng, std::vector<double>& norms,
             std::vector<double>& se) {
  std::normal_distribution<double> noise(0.0, 1.0);
  norms.clear();
  se.clear();
  for (int l = 0; l < D; ++l) {
    double n = 0.7 * std::exp(-double(D - 1 - l) / tau) * std::exp(sigma * noise(rng));
    norms.push_back(n);
    se.push_back(sigma * n);
  }
}

}  // namespace

TEST_CASE("tau fit: Student t quantiles match the tables") {
  CHECK(student_t_quantile(0.95, 1) == Approx(12.7062).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 2) == Approx(4.3027).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 10) == Approx(2.2281).epsilon(1e-4));
  CHECK(student_t_quantile(0.99, 5) == Approx(4.0321).epsilon(1e-4));
  CHECK(student_t_quantile(0.95, 100000) == Approx(1.95997).epsilon(1e-4));
  CHECK(incomplete_beta(2, 3, 0.4) == Approx(0.5248).epsilon(1e-4));
}

TEST_CASE("tau fit: a noise-free exponential profile gives tau exactly") {
  std::vector<double> norms;
  const int D = 12;
  const double tau = 7.5;
  for (int l = 0; l < D; ++l) norms.push_back(2.0 * std::exp(-double(D - 1 - l) / tau));
  DecayFitOptions o;
  DecayFit f = fit_decay(norms, {}, o);
  CHECK(f.tau == Approx(tau).epsilon(1e-10));
  CHECK(f.dcrit == Approx(1 + tau).epsilon(1e-10));
  CHECK(f.r2 == Approx(1.0));
  CHECK(f.intercept == Approx(0.0).margin(1e-10));
  CHECK(f.first_layer_ratio == Approx(std::exp(-11 / 7.5)));
  CHECK(f.non_monotone.empty());
  CHECK(f.n == 12);
  // the ratio of layer 0 at depth 1 + tau would be 1/e: the appendix A.2 definition
  CHECK(std::exp(-(f.dcrit - 1) / f.tau) == Approx(std::exp(-1.0)));
  // exclusions and the through-origin form change nothing on an exact profile
  o.exclude_first = 2;
  o.exclude_last = 1;
  DecayFit g = fit_decay(norms, {}, o);
  CHECK(g.n == 9);
  CHECK(g.layers.front() == 2);
  CHECK(g.layers.back() == 10);
  CHECK(g.tau == Approx(tau).epsilon(1e-10));
  o = DecayFitOptions();
  o.through_origin = true;
  CHECK(fit_decay(norms, {}, o).tau == Approx(tau).epsilon(1e-10));
}

TEST_CASE("tau fit: planted tau is recovered from noisy profiles and the 95% CI covers it") {
  std::mt19937_64 rng(2024);
  int covered = 0, trials = 400;
  double mean_tau = 0;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> norms, se;
    planted(16, 9.0, 0.05, rng, norms, se);
    DecayFit f = fit_decay(norms, se, DecayFitOptions());
    REQUIRE(f.weighted);
    REQUIRE(std::isfinite(f.tau));
    mean_tau += f.tau / trials;
    if (f.tau_lo <= 9.0 && 9.0 <= f.tau_hi) ++covered;
  }
  CHECK(mean_tau == Approx(9.0).epsilon(0.02));
  // nominal 95%: binomial sd over 400 trials is ~1.1%
  CHECK(double(covered) / trials > 0.91);
  CHECK(double(covered) / trials < 0.99);
}

TEST_CASE("tau fit: weights follow the measured spread") {
  // one wild layer with a large se must barely move the weighted fit
  std::vector<double> norms, se;
  const int D = 10;
  for (int l = 0; l < D; ++l) {
    norms.push_back(std::exp(-double(D - 1 - l) / 4.0));
    se.push_back(0.001 * norms.back());
  }
  norms[3] *= 3.0;
  se[3] = 5.0 * norms[3];
  DecayFit w = fit_decay(norms, se, DecayFitOptions());
  DecayFitOptions uo;
  uo.weighted = false;
  DecayFit u = fit_decay(norms, se, uo);
  CHECK(w.weighted);
  CHECK_FALSE(u.weighted);
  CHECK(w.tau == Approx(4.0).epsilon(0.01));
  CHECK(std::abs(u.tau - 4.0) > 0.1);
  CHECK(std::find(u.flags.begin(), u.flags.end(), "unweighted") != u.flags.end());
  // the violation at layer 3 -> 4 is within its (huge) noise
  REQUIRE(w.non_monotone.size() == 1);
  CHECK(w.non_monotone[0].first == 3);
  CHECK_FALSE(w.non_monotone_significant[0]);
}

TEST_CASE("tau fit: profiles that do not decay or are not monotone are flagged with their numbers") {
  auto has = [](const DecayFit& f, const std::string& flag) {
    return std::find(f.flags.begin(), f.flags.end(), flag) != f.flags.end();
  };
  // gradients grow toward early layers: no decay, tau undefined, slope still reported
  DecayFit grow = fit_decay({4.0, 3.0, 2.0, 1.0}, {}, DecayFitOptions());
  CHECK(has(grow, "no_decay"));
  CHECK(std::isnan(grow.tau));
  CHECK(grow.slope > 0);
  CHECK(has(grow, "non_monotone"));
  json j = to_json(grow);
  CHECK(j["tau"].is_null());
  CHECK(j["slope"].get<double>() > 0);
  CHECK(j["non_monotone"].size() == 3);
  // zig-zag around a weak trend: poor fit, CI reaching zero slope -> unbounded tau
  DecayFit zig = fit_decay({1.0, 2.0, 0.9, 2.1, 1.0, 2.2}, {}, DecayFitOptions());
  CHECK(has(zig, "poor_fit"));
  CHECK(has(zig, "non_monotone"));
  if (std::isfinite(zig.tau)) {
    CHECK(std::isinf(zig.tau_hi));
    CHECK(has(zig, "tau_ci_unbounded"));
    CHECK(to_json(zig)["tau_ci"][1].is_null());
    CHECK(to_json(zig)["tau_ci_unbounded"] == true);
  }
  // two points: exact, no CI
  DecayFit two = fit_decay({0.5, 1.0}, {}, DecayFitOptions());
  CHECK(has(two, "no_dof"));
  CHECK(two.tau == Approx(1 / std::log(2.0)));
  CHECK(std::isnan(two.tau_lo));
}

TEST_CASE("tau fit: bad input is refused with one clear message") {
  CHECK_THROWS_WITH(fit_decay({1.0}, {}, DecayFitOptions()), Catch::Contains("one layer: no decay to fit"));
  CHECK_THROWS_WITH(fit_decay({1.0, 0.0, 2.0}, {}, DecayFitOptions()), Catch::Contains("layer 1"));
  DecayFitOptions o;
  o.exclude_first = 2;
  o.exclude_last = 1;
  CHECK_THROWS_WITH(fit_decay({1.0, 2.0, 3.0, 4.0}, {}, o), Catch::Contains("need at least 2"));
}

TEST_CASE("profile files: CSV and metadata round-trip and train logs convert") {
  TempDir tmp;
  GradProfile p;
  p.meta = {{"format", "shapelaw.grad_profile"}, {"version", 1}, {"depth", 2}, {"width", 32}, {"step", 5},
            {"batches", 4}, {"run_id", "r"}};
  p.rows = {{-1, "embedding", 0.5, 0, 0.1}, {0, "attn", 0.25, 0, 0.01}, {0, "block", 1.0, 0, 0.1},
            {1, "attn", 0.5, 0, 0.02},      {1, "block", 2.0, 0, 0.2},  {2, "final_norm", 0.1, 0, 0}};
  compute_ratios(p);
  CHECK(p.rows[2].ratio == 0.5);
  CHECK(p.rows[1].ratio == 0.5);   // attn of layer 0 over attn of layer 1
  CHECK(p.rows[0].ratio == 0.25);  // embedding over the last block
  write_profile(tmp.path() + "/prof", p);
  GradProfile q = read_profile(tmp.path() + "/prof");
  REQUIRE(q.rows.size() == p.rows.size());
  CHECK(q.rows[4].norm == 2.0);
  CHECK(q.rows[4].norm_sd == 0.2);
  CHECK(q.meta["width"] == 32);
  std::vector<double> norms, se;
  component_series(q, "block", norms, se);
  CHECK(norms == std::vector<double>{1.0, 2.0});
  CHECK(se[1] == Approx(0.1));  // sd / sqrt(4 batches)
  CHECK_THROWS_WITH(component_series(q, "mlp", norms, se), Catch::Contains("no 'mlp' norm for layer 0"));
  CHECK_THROWS_WITH(read_profile(tmp.path()), Catch::Contains("no grad_profile.csv"));
  // a newer grad_profile.json is refused by the one versioned-record check
  json newer = q.meta;
  newer["version"] = 2;
  write_text(tmp.path() + "/prof/grad_profile.json", newer.dump());
  CHECK_THROWS_WITH(read_profile(tmp.path() + "/prof"),
                    Catch::Contains("grad_profile.json: field 'version': 2 is newer than this tool understands (at most 1)"));
  newer["format"] = "shapelaw.grad_fit";
  write_text(tmp.path() + "/prof/grad_profile.json", newer.dump());
  CHECK_THROWS_WITH(read_profile(tmp.path() + "/prof"),
                    Catch::Contains("field 'format': expected \"shapelaw.grad_profile\", got \"shapelaw.grad_fit\""));

  write_text(tmp.path() + "/grad_norms.csv",
             "step,layer,component,norm\n3,-1,embedding,1\n3,0,block,1\n3,1,block,2\n7,0,block,0.5\n7,1,block,2\n");
  GradProfile t = profile_from_train_log(tmp.path() + "/grad_norms.csv", -1);
  CHECK(t.meta["log_step"] == 7);
  CHECK(t.meta["step"] == 6);  // the weights after 6 updates
  CHECK(t.depth() == 2);
  CHECK(t.rows[0].ratio == 0.25);
  CHECK_THROWS_WITH(profile_from_train_log(tmp.path() + "/grad_norms.csv", 5),
                    Catch::Contains("steps present: 3, 7"));
}

TEST_CASE("summarize: the tau table round-trips into fit-law tau-power and tau-log") {
  TempDir tmp;
  // planted tau = 2.06 W^0.44 (the paper's law), 2% noise, 3 depths per width
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 0.02);
  int i = 0;
  for (int W : {64, 128, 256, 512, 1024, 2048}) {
    for (int D : {8, 16, 24}) {
      const double tau = 2.06 * std::pow(W, 0.44) * std::exp(noise(rng));
      std::vector<double> norms;
      for (int l = 0; l < D; ++l) norms.push_back(std::exp(-double(D - 1 - l) / tau));
      DecayFit f = fit_decay(norms, {}, DecayFitOptions());
      GradProfile p;
      p.meta = {{"run_id", "d" + std::to_string(D) + "w" + std::to_string(W)}, {"depth", D}, {"width", W},
                {"step", 1000}};
      std::string dir = tmp.path() + "/runs/" + std::to_string(i++);
      make_directories(dir);
      write_file_atomic(dir + "/grad_fit.json", fit_record(p, "block", f, DecayFitOptions(), "x").dump(2));
    }
  }
  // one run whose profile does not decay: kept (empty tau) unless --only-valid
  GradProfile flat;
  flat.meta = {{"run_id", "flat"}, {"depth", 4}, {"width", 64}, {"step", 1000}};
  make_directories(tmp.path() + "/runs/flat");
  write_file_atomic(tmp.path() + "/runs/flat/grad_fit.json",
                    fit_record(flat, "block", fit_decay({2, 1.5, 1.2, 1}, {}, DecayFitOptions()), DecayFitOptions(), "x").dump());

  SummaryTable all = summarize_fits({tmp.path() + "/runs"}, SummarizeOptions());
  CHECK(all.rows == 19);
  CHECK(all.csv.rfind("run,depth,width,step,tau,tau_lo,tau_hi,r2,dcrit,", 0) == 0);
  CHECK(all.csv.find("\nflat,4,64,1000,,,,") != std::string::npos);
  REQUIRE(all.warnings.size() == 1);
  CHECK(all.warnings[0].find("no finite tau (no_decay") != std::string::npos);
  SummarizeOptions only;
  only.only_valid = true;
  SummaryTable valid = summarize_fits({tmp.path() + "/runs"}, only);
  CHECK(valid.rows == 18);
  write_file_atomic(tmp.path() + "/tau.csv", valid.csv);
  only.step = 999;
  CHECK(summarize_fits({tmp.path() + "/runs"}, only).rows == 0);
  {
    // a grad_fit.json of a newer version is refused, naming the file
    make_directories(tmp.path() + "/newer/r");
    json rec = fit_record(flat, "block", fit_decay({2, 1.5, 1.2, 1}, {}, DecayFitOptions()), DecayFitOptions(), "x");
    rec["version"] = 2;
    write_file_atomic(tmp.path() + "/newer/r/grad_fit.json", rec.dump());
    CHECK_THROWS_WITH(summarize_fits({tmp.path() + "/newer"}, SummarizeOptions()),
                      Catch::Contains("r/grad_fit.json: field 'version': 2 is newer than this tool understands (at most 1)"));
  }

  auto r = run(bin("fit-law") + " --tau --no-loo -B 0 --format json " + tmp.path() + "/tau.csv");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json rec = json::parse(r.output.substr(r.output.find('{')));
  bool saw_power = false, saw_log = false;
  double r2_power = 0, r2_log = 0;
  for (auto& m : rec["models"]) {
    if (m["name"] == "tau-power") {
      saw_power = true;
      CHECK(m["params"]["a"]["estimate"].get<double>() == Approx(0.44).margin(0.02));
      CHECK(m["params"]["c"]["estimate"].get<double>() == Approx(2.06).epsilon(0.1));
      r2_power = m["metrics"]["r2"].get<double>();
    }
    if (m["name"] == "tau-log") {
      saw_log = true;
      r2_log = m["metrics"]["r2"].get<double>();
    }
  }
  CHECK(saw_power);
  CHECK(saw_log);
  CHECK(r2_power > 0.98);
  CHECK(r2_power > r2_log);
  // the full table (with the no-decay row) needs fit-law's --skip-bad-rows
  write_file_atomic(tmp.path() + "/all.csv", all.csv);
  auto bad = run(bin("fit-law") + " --tau --no-loo -B 0 " + tmp.path() + "/all.csv");
  CHECK(bad.exit_code != 0);
  CHECK(bad.output.find("tau") != std::string::npos);
  auto skip = run(bin("fit-law") + " --tau --no-loo -B 0 --skip-bad-rows " + tmp.path() + "/all.csv");
  INFO(skip.output);
  CHECK(skip.exit_code == 0);
}
