#include "catch.h"

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "audit/dcrit_law.h"
#include "audit/fit_record.h"
#include "audit/paper_data.h"
#include "audit/verdict.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
using namespace shapelaw::audit;

TEST_CASE("paper constants reproduce Table 4 Table 8 and §4.2 to their printed precision") {
  Law law = builtin_law("paper-log");
  auto round1 = [](double x) { return std::round(x * 10) / 10; };
  // Table 4 (one decimal)
  CHECK(round1(dcrit(law.point, 12288)) == Approx(22.9));
  CHECK(round1(dcrit(law.point, 18432)) == Approx(23.9));
  CHECK(round1(dcrit(law.point, 8192)) == Approx(21.9));
  // Table 8 ("~23", "~24", "~22") and its verdicts 4x, 5x, 3.6x
  CHECK(std::round(dcrit(law.point, 12288)) == 23);
  CHECK(std::round(dcrit(law.point, 18432)) == 24);
  CHECK(std::round(dcrit(law.point, 8192)) == 22);
  CHECK(std::round(96 / dcrit(law.point, 12288)) == 4);
  CHECK(std::round(118 / dcrit(law.point, 18432)) == 5);
  CHECK(std::floor(10 * 80 / dcrit(law.point, 8192)) / 10 == Approx(3.6));
  // §5.1: "D/D_crit ratios of 3.6–4.9×"
  CHECK(80 / dcrit(law.point, 8192) == Approx(3.65).margin(0.01));
  CHECK(118 / dcrit(law.point, 18432) == Approx(4.94).margin(0.01));
  // §4.2
  CHECK(round1(dcrit(law.point, 512)) == Approx(15.2));
  CHECK(round1(dcrit(law.point, 1536)) == Approx(17.8));
  CHECK(dcrit(law.point, 1024) == Approx(16.84).margin(0.01));  // printed 16.9: a rounding slip
  // Appendix C.0.34–C.0.37 print 22.6, 23.6, 21.6, 20.0: all 0.2–0.3 below 2.43·ln W
  int appendix = 0;
  for (const auto& t : paper_thresholds()) {
    if (t.source.rfind("C.0.3", 0) != 0) continue;
    INFO(t.source);
    double diff = dcrit(law.point, t.width) - t.dcrit;
    CHECK(diff > 0.2);
    CHECK(diff < 0.31);
    ++appendix;
  }
  CHECK(appendix == 4);
  // κ's interval [2.09, 2.77] carries to D_crit
  auto ci = draw_interval(law, [](const LawParams& p) { return dcrit(p, 12288); });
  REQUIRE(ci);
  CHECK(ci->lo == Approx(2.09 * std::log(12288.0)).epsilon(0.03));
  CHECK(ci->hi == Approx(2.77 * std::log(12288.0)).epsilon(0.03));
}

TEST_CASE("the power forms: τ = 2.06·W^0.44 and the fit to Table 10's D_crit column") {
  Law tau = builtin_law("paper-tau");
  CHECK(dcrit(tau.point, 512) == Approx(32.0).margin(0.15));  // about twice 2.43·ln 512
  CHECK(dcrit(tau.point, 4096) == Approx(80.0).margin(0.2));
  Law t10 = builtin_law("paper-table10");
  CHECK(t10.point.a == 0.44);
  CHECK(t10.point.c == Approx(0.743).margin(0.001));
  CHECK(dcrit(t10.point, 4096) == Approx(28).margin(1.0));
  CHECK(dcrit(t10.point, 2816) == Approx(24.1).margin(0.5));  // §4.8's 24.1
  // custom constants
  CHECK(dcrit(builtin_law("log:3").point, std::exp(2.0)) == Approx(6.0));
  CHECK(dcrit(builtin_law("power:2,0.5").point, 400) == Approx(40.0));
  REQUIRE_THROWS_WITH(builtin_law("cubic"), Catch::Contains("not a built-in law"));
  REQUIRE_THROWS_WITH(builtin_law("log:x"), Catch::Contains("log:KAPPA"));
}

TEST_CASE("Φ and the loss difference of a redesign") {
  LawParams p;
  p.form = LawParams::Form::log;
  p.kappa = 2.43;
  p.has_phi = true;
  p.gamma = 0.18;
  p.mu = 0.35;
  double w = 12288, dc = 2.43 * std::log(w);
  CHECK(phi(p, 96, w) == Approx(0.18 * (96 - dc) / std::pow(w, 0.35)));
  CHECK(phi(p, 20, w) == 0.0);
  p.phi_relative = true;
  CHECK(phi(p, 96, w) == Approx(0.18 * (96 - dc) / std::pow(w, 0.35) / dc));
  p.phi_relative = false;
  // equal N, capacity ignored: ΔL = Φ(new) − Φ(old)
  CHECK(delta_loss(p, 96, w, 1e11, 23, 25088, 1e11) == Approx(phi(p, 23, 25088) - phi(p, 96, w)));
  p.has_capacity = true;
  p.A = 400;
  p.alpha = 0.3;
  CHECK(delta_loss(p, 96, w, 1e11, 23, 25088, 2e11) ==
        Approx(phi(p, 23, 25088) - phi(p, 96, w) + 400 * (std::pow(2e11, -0.3) - std::pow(1e11, -0.3))));
}

TEST_CASE("verdict thresholds and the equal-parameter redesign") {
  VerdictOptions o;
  CHECK(verdict(0.9, o) == "within D_crit");
  CHECK(verdict(1.2, o) == "near D_crit");
  CHECK(verdict(1.6, o) == "over-deep");
  CHECK(verdict(4.2, o) == "far over-deep");
  CHECK(thresholds_crossed({1.8, 2.4}, o) == std::vector<double>{2.0});
  // GPT-3 at D = 24 keeps 12·D·W² with W = 2·12288 exactly (the paper's "W ≈ 28,000" has 1.3× the parameters)
  double n = 12.0 * 96 * 12288.0 * 12288.0;
  auto r = redesign(96, 24.0, n);
  REQUIRE(r);
  CHECK(r->depth == 24);
  CHECK(r->width == 24576);
  CHECK(r->n_redesign == Approx(n));
  auto r2 = redesign(96, 22.88, n);
  CHECK(r2->depth == 23);
  CHECK(r2->width % 128 == 0);
  CHECK(r2->n_redesign / n == Approx(1.0).epsilon(0.01));
  CHECK_FALSE(redesign(16, 17.8, 1e8));  // already at or below D_crit: no redesign
}

namespace {
std::string write_fit(const test::TempDir& dir, const nlohmann::json& j) {
  std::string path = dir.path() + "/fit.json";
  std::ofstream(path) << j.dump();
  return path;
}
nlohmann::json fit_record() {
  nlohmann::json j;
  j["format"] = "shapelaw.fit";
  j["version"] = 1;
  j["options"] = nlohmann::json::object();
  auto est = [](double v) { return nlohmann::json{{"estimate", v}, {"se", 0.1}}; };
  nlohmann::json m;
  m["name"] = "paper-log";
  m["param_names"] = {"A", "alpha", "B", "delta", "kappa", "gamma", "mu"};
  m["params"] = {{"A", est(400)}, {"alpha", est(0.3)}, {"B", est(10)}, {"delta", est(0.2)},
                 {"kappa", est(2.5)}, {"gamma", est(0.2)}, {"mu", est(0.3)}};
  m["bootstrap_draws"] = nlohmann::json::array();
  for (int i = 0; i < 200; ++i) {
    double k = 2.0 + i * (1.0 / 199);  // κ uniform on [2, 3]
    m["bootstrap_draws"].push_back({400, 0.3, 10, 0.2, k, 0.2, 0.3});
  }
  m["bootstrap_draws"].push_back({400, 0.3, 10, 0.2, nullptr, 0.2, 0.3});  // a failed resample: skipped
  m["dcrit"] = {{"form", "log"}, {"kappa", 2.5}};
  nlohmann::json plain;
  plain["name"] = "chinchilla";
  plain["params"] = {{"A", est(400)}};
  j["models"] = {m, plain};
  j["selected_model"] = "paper-log";
  return j;
}
}  // namespace

TEST_CASE("a fit record's selected model its draws and its Φ option carry through") {
  test::TempDir dir;
  auto j = fit_record();
  std::string path = write_fit(dir, j);
  Law law = law_from_fit_file(path, "");
  CHECK(law.point.kappa == 2.5);
  CHECK(law.point.has_phi);
  CHECK(law.point.has_capacity);
  CHECK_FALSE(law.point.phi_relative);
  CHECK(law.draws.size() == 200);
  auto ci = draw_interval(law, [](const LawParams& p) { return dcrit(p, 1000); });
  REQUIRE(ci);
  CHECK(ci->lo == Approx(2.025 * std::log(1000.0)).epsilon(0.01));
  CHECK(ci->hi == Approx(2.975 * std::log(1000.0)).epsilon(0.01));

  j["options"]["phi"] = "relative";
  path = write_fit(dir, j);
  CHECK(law_from_fit_file(path, "").point.phi_relative);

  j["models"][0]["dcrit"] = {{"form", "power"}, {"c", 1.5}, {"a", 0.4}};
  path = write_fit(dir, j);
  Law power = law_from_fit_file(path, "paper-log");
  CHECK(dcrit(power.point, 1000) == Approx(1.5 * std::pow(1000.0, 0.4)));
}

TEST_CASE("fit record errors name the file and field") {
  test::TempDir dir;
  auto j = fit_record();
  std::string path = write_fit(dir, j);
  REQUIRE_THROWS_WITH(law_from_fit_file(path, "chinchilla"),
                      Catch::Contains(path) && Catch::Contains("models[chinchilla].dcrit") &&
                          Catch::Contains("models with D_crit: paper-log"));
  REQUIRE_THROWS_WITH(law_from_fit_file(path, "nope"), Catch::Contains("no model named 'nope'"));
  auto bad = j;
  bad["format"] = "other";
  REQUIRE_THROWS_WITH(law_from_fit_file(write_fit(dir, bad), ""), Catch::Contains("field 'format'"));
  bad = j;
  bad["version"] = 2;
  REQUIRE_THROWS_WITH(law_from_fit_file(write_fit(dir, bad), ""), Catch::Contains("field 'version'"));
  bad = j;
  bad["models"][0]["bootstrap_draws"][3] = {1, 2};
  REQUIRE_THROWS_WITH(law_from_fit_file(write_fit(dir, bad), ""),
                      Catch::Contains("bootstrap_draws[3]") && Catch::Contains("expected 7 numbers"));
  bad = j;
  bad["models"][0]["dcrit"]["kappa"] = "big";
  REQUIRE_THROWS_WITH(law_from_fit_file(write_fit(dir, bad), ""), Catch::Contains("dcrit.kappa"));
}
