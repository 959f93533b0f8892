// lib/study: the numbers and verdicts the reports print, pinned on fixed inputs.
#include "catch.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "study/analysis.h"
#include "study/curves.h"
#include "test_support.h"

using namespace shapelaw;
using nlohmann::json;

namespace {

struct Spec {
  std::string id;
  int D, W;
  double lr, loss;
  int seed = 42;
  std::string param = "sp";
  std::string group = "";
  double tokens = 1179648;
};

std::string write_summary(const std::string& dir, const Spec& s) {
  const double W = s.W, non_emb = s.D * (12.0 * W * W + 4.0 * W) + 2.0 * W;
  json j = {{"format", "shapelaw.summary"}, {"version", 1}, {"run_id", s.id}, {"depth", s.D}, {"width", s.W},
            {"vocab_size", 2048}, {"tokens", s.tokens}, {"param", s.param}, {"wall_seconds", 10.0},
            {"params", {{"total", non_emb + 2 * 2048.0 * W}, {"non_embedding", non_emb}, {"paper_12DW2", 12.0 * s.D * W * W}}},
            {"final_val_loss", s.loss},
            {"config", {{"lr", s.lr}, {"seed", s.seed}, {"model", {{"depth", s.D}, {"width", s.W}}}}}};
  if (!s.group.empty()) j["group"] = s.group;
  const std::string run = dir + "/" + s.id;
  std::filesystem::create_directories(run);
  test::write_text(run + "/summary.json", j.dump());
  return run + "/summary.json";
}

std::vector<std::string> write_all(const std::string& dir, const std::vector<Spec>& specs) {
  std::vector<std::string> paths;
  for (const auto& s : specs) paths.push_back(write_summary(dir, s));
  return paths;
}

// Three seeds at D = 1 and D = 16 of W = 16: means 5.1 and 5.4, each with Σ(y−ȳ)² = 0.02.
std::vector<Spec> seeded_sweep() {
  std::vector<Spec> s;
  const double shallow[] = {5.0, 5.1, 5.2}, deep[] = {5.4, 5.5, 5.3};
  for (int k = 0; k < 3; ++k) {
    s.push_back({"w16-d1-s" + std::to_string(42 + k), 1, 16, 3e-3, shallow[k], 42 + k, "sp", "w16-d1"});
    s.push_back({"w16-d16-s" + std::to_string(42 + k), 16, 16, 3e-3, deep[k], 42 + k, "sp", "w16-d16"});
  }
  return s;
}

json fit_record(double kappa, double A, double alpha, const std::vector<std::string>& warnings = {},
                json kappa_ci = nullptr) {
  json k = {{"estimate", kappa}, {"at_bound", kappa == 0}};
  if (!kappa_ci.is_null()) k["ci95_bootstrap"] = kappa_ci;
  return {{"models",
           {{{"name", "paper-log"},
             {"params", {{"A", {{"estimate", A}}}, {"alpha", {{"estimate", alpha}}}, {"kappa", k}}}},
            {{"name", "kaplan"}, {"params", {{"A", {{"estimate", 6.0}}}, {"alpha", {{"estimate", 0.02}}}}}}}},
          {"comparison",
           {{"likelihood_ratio",
             {{{"full", "paper-log"}, {"reduced", "no-phi"}, {"statistic", 26.9}, {"df", 3}, {"p_value", 1e-5},
               {"converged", {{"full", true}, {"reduced", true}}}}}}}},
          {"selected_model", "paper-log"},
          {"options", {{"phi", "absolute"}, {"n_resolved", "nonembedding"}}},
          {"input", {{"tokens_vary", false}}},
          {"warnings", warnings}};
}

}  // namespace

TEST_CASE("row_of strips a swept lr's and a seed's suffix, nothing else") {
  CHECK(study::row_of("w16-d4") == "w16-d4");
  CHECK(study::row_of("w16-d4-s43") == "w16-d4");
  CHECK(study::row_of("w16-d4-lr1e-2") == "w16-d4");
  CHECK(study::row_of("w16-d4-lr3e-3-s44") == "w16-d4");
  CHECK(study::row_of("eq-w48-d8") == "eq-w48-d8");
}

TEST_CASE("replicates: means per configuration, the pooled seed SD, and the excess with its SE") {
  test::TempDir dir;
  const auto runs = study::read_runs(write_all(dir.path(), seeded_sweep()));
  const auto cells = study::cells_of(runs);
  REQUIRE(cells.size() == 2);
  CHECK(cells[0].depth == 1);
  CHECK(cells[0].n == 3);
  CHECK(cells[0].mean == Approx(5.1).epsilon(1e-12));
  CHECK(cells[0].sd == Approx(0.1).epsilon(1e-9));
  const auto spread = study::pooled_spread(cells);
  REQUIRE(spread.available);
  CHECK(spread.df == 4);
  CHECK(spread.sd == Approx(0.1).epsilon(1e-9));  // sqrt((0.02 + 0.02) / 4)
  const auto ex = study::excess_per_width(cells, spread);
  REQUIRE(ex.size() == 1);
  CHECK(ex[0].best_depth == 1);
  CHECK(ex[0].deepest_depth == 16);
  CHECK(ex[0].excess == Approx(0.3).epsilon(1e-9));
  CHECK(ex[0].se == Approx(0.1 * std::sqrt(2.0 / 3.0)).epsilon(1e-9));
  const auto v = study::judge_penalty(ex[0]);
  CHECK(v.state == study::Penalty::survives);
  CHECK(v.text == "survives (+0.300 nats, 3.7 SE)");
}

TEST_CASE("one penalty rule: deepest best, within 2 SE, shrinks against a reference, no SE") {
  study::WidthExcess e;
  e.width = 16;
  e.best_depth = 1;
  e.deepest_depth = 16;
  e.excess = 0.05;
  e.se = 0.03;
  CHECK(study::judge_penalty(e).state == study::Penalty::vanishes);
  CHECK(study::judge_penalty(e).text == "vanishes (+0.050 nats, within 2 SE)");
  e.excess = 0.2;
  study::WidthExcess ref = e;
  ref.excess = 0.4;
  CHECK(study::judge_penalty(e, &ref).state == study::Penalty::shrinks);   // 0.2 > 2·√2·0.03
  CHECK(study::judge_penalty(e, &ref).text == "survives but shrinks by 0.200 nats (to +0.200)");
  ref.excess = 0.25;
  CHECK(study::judge_penalty(e, &ref).state == study::Penalty::survives);  // 0.05 < 0.085
  e.best_depth = 16;
  CHECK(study::judge_penalty(e).text == "vanishes: the deepest run (D=16) is the best");
  e.best_depth = 1;
  e.se = -1;
  CHECK(study::judge_penalty(e).state == study::Penalty::unjudged);
}

TEST_CASE("the penalty sentence: the deepest run best everywhere needs no SE, and with one seed none is claimed") {
  study::WidthExcess a;
  a.width = 16;
  a.best_depth = a.deepest_depth = 16;
  study::WidthExcess b = a;
  b.width = 64;
  b.best_depth = b.deepest_depth = 4;
  const std::vector<study::WidthExcess> both{a, b};
  const std::vector<study::PenaltyVerdict> verdicts{study::judge_penalty(a), study::judge_penalty(b)};
  const std::string one_seed = study::penalty_sentence(both, verdicts, study::SeedSpread{});
  CHECK(one_seed.rfind("No: at every width the deepest run is the best (one seed per configuration: no SE", 0) == 0);
  CHECK(one_seed.find("2 SE") == std::string::npos);
  CHECK(one_seed.find("W = 64: the deepest run (D = 4) is the best") != std::string::npos);
  study::SeedSpread seeds;
  seeds.available = true;
  seeds.sd = 0.01;
  seeds.source = "3 seeds";
  CHECK(study::penalty_sentence(both, verdicts, seeds).rfind("No: at every width the deepest run is the best: ", 0) == 0);
  // one width within 2 SE, the other's deepest best: the 2-SE wording, with its SE
  b.best_depth = 2;
  b.excess = 0.01;
  b.se = 0.02;
  const std::string mixed = study::penalty_sentence({a, b}, {study::judge_penalty(a), study::judge_penalty(b)}, seeds);
  CHECK(mixed.rfind("No: at no width is the deepest run more than 2 SE worse than the best depth", 0) == 0);
}

TEST_CASE("the best lr per row follows fit-law --best-of's rule: lowest mean, ties to the smaller, edges flagged") {
  test::TempDir dir;
  const auto runs = study::read_runs(write_all(
      dir.path(), {{"w16-d1-lr1e-3", 1, 16, 1e-3, 5.3}, {"w16-d1-lr3e-3", 1, 16, 3e-3, 5.1}, {"w16-d1-lr1e-2", 1, 16, 1e-2, 5.1},
                   {"w16-d2-lr1e-3", 2, 16, 1e-3, 5.0}, {"w16-d2-lr3e-3", 2, 16, 3e-3, 5.2},
                   {"w16-d4", 4, 16, 3e-3, 5.2}}));
  const auto best = study::best_lr_per_row(study::cells_of(runs));
  REQUIRE(best.size() == 3);
  CHECK(best[0].best.lr == 3e-3);  // the tie with 1e-2 keeps the smaller
  CHECK(best[0].edge.empty());
  CHECK(best[1].best.lr == 1e-3);
  CHECK(best[1].edge == "smallest");
  CHECK(best[2].single);
}

TEST_CASE("law evidence: fit-law's flags, a critical depth below the grid and a degenerate capacity term are read once") {
  CHECK(study::capacity_is_degenerate(-0.1, 0.3));
  CHECK(study::capacity_is_degenerate(5, 0.01));
  CHECK_FALSE(study::capacity_is_degenerate(5, 0.02));
  const std::vector<int> widths = {16, 32, 64};
  auto ok = study::law_evidence(fit_record(2.43, 8, 0.3), "fit.json", widths, 1);
  CHECK(ok.usable());
  CHECK_FALSE(ok.dcrit_below_grid);
  CHECK(study::law_sentence(ok).rfind("Yes within the grid: the paper's law with Φ", 0) == 0);
  auto low = study::law_evidence(fit_record(0, 8, 0.3), "fit.json", widths, 1);
  CHECK(low.dcrit_below_grid);
  CHECK(low.kappa_at_bound);
  CHECK(study::law_sentence(low).find("no critical depth inside the grid") != std::string::npos);
  CHECK(study::law_sentence(low).find("supported") == std::string::npos);
  auto flagged = study::law_evidence(
      fit_record(2.43, 8, 0.3, {"LR test paper-log vs no-phi: paper-log did not converge, so the statistic compares an "
                                "unfinished fit: do not use it"}),
      "fit.json", widths, 1);
  CHECK_FALSE(flagged.usable());
  CHECK(study::law_sentence(flagged).rfind("No verdict: fit-law flags its test of Φ", 0) == 0);
  auto degenerate = study::law_evidence(fit_record(2.43, -1, 0.3), "fit.json", widths, 1);
  CHECK(study::law_sentence(degenerate).find("capacity term is degenerate (A = -1") != std::string::npos);
  CHECK_THROWS_WITH(study::law_evidence(json::object(), "x/fit.json", widths, 1),
                    Catch::Contains("x/fit.json") && Catch::Contains("not a fit-law record"));
}

TEST_CASE("law evidence reads a Box-Cox paper-log (s, L1, alpha): the slope decides, A = s/alpha is derived") {
  const std::vector<int> widths = {16, 32, 64};
  auto box_cox = [](double s, double alpha) {
    json f = fit_record(2.43, 0, alpha);
    json& params = f["models"][0]["params"];
    params.erase("A");
    params["s"] = {{"estimate", s}};
    params["L1"] = {{"estimate", 5.0}};
    return f;
  };
  auto falling = study::law_evidence(box_cox(2.4, 0.3), "fit.json", widths, 1);
  CHECK_FALSE(falling.capacity_degenerate);
  CHECK(falling.s == 2.4);
  CHECK(falling.A == Approx(8));
  // alpha < 0 with s > 0: loss still falls with N, but alpha <= 0.01 is flat by the rule
  CHECK(study::law_evidence(box_cox(0.1, -0.05), "fit.json", widths, 1).capacity_degenerate);
  // loss rising with N (s < 0) is degenerate at any alpha
  auto rising = study::law_evidence(box_cox(-0.3, 0.3), "fit.json", widths, 1);
  CHECK(rising.capacity_degenerate);
  CHECK(study::law_sentence(rising).find("capacity term is degenerate (A = -1") != std::string::npos);
  // the paper's coordinates give the same rule through s = A*alpha
  CHECK(study::law_evidence(fit_record(2.43, -1, 0.3), "fit.json", widths, 1).s == Approx(-0.3));
}

TEST_CASE("law evidence: D_crit on the shallowest run, a CI that reaches it, and a test the selection overrules") {
  const std::vector<int> widths = {16, 32, 64};
  // κ = 1/ln 64 puts D_crit(64) on D = 1 exactly; the last bit of κ must not decide the verdict
  for (double kappa : {std::nextafter(1 / std::log(64.0), 1.0), 1 / std::log(64.0),
                       std::nextafter(1 / std::log(64.0), 0.0)}) {
    INFO("kappa " << std::hexfloat << kappa);
    auto kink = study::law_evidence(fit_record(kappa, 8, 0.3, {}, {0, 0.36}), "fit.json", widths, 1);
    CHECK(kink.dcrit_below_grid);
    CHECK(study::law_sentence(kink).find("κ = 0.24, 95% CI [0, 0.36]") != std::string::npos);
  }
  auto wide = study::law_evidence(fit_record(0.72, 8, 0.3, {}, {0, 2.36}), "fit.json", widths, 1);
  CHECK_FALSE(wide.dcrit_below_grid);
  CHECK(wide.dcrit_unresolved);
  CHECK(study::law_sentence(wide).rfind("Φ yes, its critical depth unresolved", 0) == 0);
  CHECK(study::law_sentence(wide).find("Yes within the grid") == std::string::npos);
  auto tight = study::law_evidence(fit_record(2.43, 8, 0.3, {}, {1.5, 3.1}), "fit.json", widths, 1);
  CHECK_FALSE(tight.dcrit_unresolved);
  CHECK(study::law_sentence(tight).rfind("Yes within the grid", 0) == 0);
  CHECK(study::law_sentence(tight).find("95% CI [1.5, 3.1]") != std::string::npos);
  // p = 1e-5 but AICc prefers the law without Φ: neither "supported" nor "not supported"
  json overruled = fit_record(2.43, 8, 0.3);
  overruled["selected_model"] = "no-phi";
  overruled["comparison"]["criterion"] = "aicc";
  overruled["comparison"]["table"] = {{{"model", "paper-log"}, {"delta_aicc", 1.75}}, {{"model", "no-phi"}, {"delta_aicc", 0}}};
  auto o = study::law_evidence(overruled, "fit.json", widths, 1);
  CHECK(o.phi_delta == 1.75);
  const std::string text = study::law_sentence(o);
  CHECK(text.rfind("Undecided: the likelihood-ratio test favours Φ", 0) == 0);
  CHECK(text.find("aicc selects `no-phi` (paper-log 1.75 behind)") != std::string::npos);
  CHECK(text.find("not supported") == std::string::npos);
  auto degenerate = study::law_evidence(fit_record(2.43, -1, 0.3), "fit.json", widths, 1);
  CHECK(study::law_sentence(degenerate).find("In the paper's law (paper-log) the capacity term") != std::string::npos);
}

TEST_CASE("law curves are the law's own predict at the record's estimates") {
  test::TempDir dir;
  const auto runs = study::read_runs(write_all(dir.path(), {{"w16-d1", 1, 16, 3e-3, 5.2}, {"w16-d4", 4, 16, 3e-3, 5.3}}));
  const auto pts = study::law_curves(fit_record(2.43, 8, 0.3), {"kaplan", "no-such-law"}, runs, 10);
  REQUIRE(pts.size() == 11);
  for (const auto& p : pts) {
    CHECK(p.model == "kaplan");
    // N(D) through the runs: D·(12W² + 4W) + 2W exactly (a line)
    CHECK(p.N == Approx(p.depth * (12.0 * 256 + 64) + 32).epsilon(1e-9));
    CHECK(p.loss == Approx(6.0 / std::pow(p.N, 0.02)).epsilon(1e-12));
  }
  CHECK(pts.front().depth == Approx(1));
  CHECK(pts.back().depth == Approx(6));  // 1.5 × the deepest run
  CHECK(study::curves_csv(pts).rfind("model,width,depth,N,T,loss\nkaplan,16,1,", 0) == 0);
  for (const auto& p : pts) CHECK(p.T == 1179648);  // every run saw the same tokens: that number, exactly
}

TEST_CASE("law curves of a budgeted study: each shape drawn at its own budget, not at one T") {
  test::TempDir dir;
  // 20 tokens per non-embedding parameter, as make chinchilla: T = 20·N(D) at every depth
  auto spec = [](const std::string& id, int D) {
    const double non_emb = D * (12.0 * 256 + 64) + 32;
    Spec s{id, D, 16, 3e-3, 5.0};
    s.tokens = 20 * non_emb;
    return s;
  };
  const auto runs = study::read_runs(write_all(dir.path(), {spec("w16-d1", 1), spec("w16-d4", 4), spec("w16-d16", 16)}));
  const auto pts = study::law_curves(fit_record(2.43, 8, 0.3), {"kaplan"}, runs, 10);
  REQUIRE(pts.size() == 11);
  for (const auto& p : pts) CHECK(p.T == Approx(20 * p.N).epsilon(1e-9));
  CHECK(pts.back().T > 20 * pts.front().T);  // D = 24 against D = 1
}

TEST_CASE("the study's headline separates the penalty from the law, and points to the controls") {
  test::TempDir dir;
  auto paths = write_all(dir.path(), seeded_sweep());
  const auto a = study::analyze_study(fit_record(0, 8, 0.3), "fit.json", paths, nullptr);
  CHECK(a.spread.available);
  CHECK(a.headline.find("**Is there a depth penalty at this budget?** Yes, at every width: W = 16: D = 16 is +0.300 ± "
                        "0.082 nats (3.7 SE) above the best depth D = 1.") != std::string::npos);
  CHECK(a.headline.find("**Does the paper's law describe it?** Not as the paper states it") != std::string::npos);
  CHECK(a.headline.find("Not run here: `make controls`") != std::string::npos);
  CHECK(a.headline.find("tokens per parameter") != std::string::npos);
  const json j = study::study_json(a);
  CHECK(j["format"] == "shapelaw.study");
  CHECK(j["arm"]["excess"][0]["penalty"] == "survives");
  CHECK(j["seed_spread"]["df"] == 4);
  // the order of the inputs changes nothing
  std::reverse(paths.begin(), paths.end());
  CHECK(study::study_json(study::analyze_study(fit_record(0, 8, 0.3), "fit.json", paths, nullptr)) == j);
}

TEST_CASE("controls: three arms, the best lr per row, verdicts against the fixed-lr arm, equal parameters") {
  test::TempDir dir;
  std::vector<Spec> sp, cp;
  // SP: the penalty at lr 3e-3 is 0.4; tuned it shrinks to 0.1. CompleteP: the deepest is best.
  for (int D : {1, 4, 16}) {
    const std::string r = "w16-d" + std::to_string(D);
    sp.push_back({r, D, 16, 3e-3, 5.0 + (D == 16 ? 0.4 : D == 4 ? 0.1 : 0)});
    sp.push_back({r + "-lr1e-2", D, 16, 1e-2, 5.05 + (D == 16 ? 0.15 : 0.02)});
    cp.push_back({r + "-lr3e-2", D, 16, 3e-2, 5.0 - 0.01 * D, 42, "completep"});
    cp.push_back({r + "-lr1e-1", D, 16, 1e-1, 5.1 - 0.01 * D, 42, "completep"});
  }
  sp.push_back({"eq-w32-d4", 4, 32, 3e-3, 5.0});
  sp.push_back({"eq-w64-d1", 1, 64, 3e-3, 4.9});
  cp.push_back({"eq-w32-d4-lr3e-2", 4, 32, 3e-2, 4.95, 42, "completep"});
  cp.push_back({"eq-w64-d1-lr3e-2", 1, 64, 3e-2, 4.97, 42, "completep"});
  const auto sp_paths = write_all(dir.path() + "/sp", sp), cp_paths = write_all(dir.path() + "/cp", cp);
  study::SeedSpread spread{true, 0.03, 8, "stand-in"};
  const auto a = study::analyze_controls(sp_paths, cp_paths, 3e-3, {}, spread);
  REQUIRE(a.arms.size() == 3);
  CHECK(a.arms[0].name == "sp-fixed");
  REQUIRE(a.arms[0].excess.size() == 1);  // W 32 and 64 are no depth sweeps
  CHECK(a.arms[0].excess[0].excess == Approx(0.4));
  CHECK(a.arms[0].verdicts[0].state == study::Penalty::survives);
  REQUIRE(a.arms[1].excess.size() == 1);
  CHECK(a.arms[1].excess[0].excess == Approx(0.2 - 0.0));  // d16 tuned 5.2 vs d1 5.0
  CHECK(a.arms[1].verdicts[0].state == study::Penalty::shrinks);
  CHECK(a.arms[2].verdicts[0].text == "vanishes: the deepest run (D=16) is the best");
  CHECK(a.arms[2].best[0].edge == "smallest");
  CHECK(a.equal_params_n == 12.0 * 4 * 32 * 32);
  CHECK(a.equal_params.size() == 9);  // both equal-N rows and w16-d16 (12·16·16² = 49152 too), in each arm
  const json j = study::controls_json(a);
  CHECK(j["verdict"].get<std::string>().find("**CompleteP, best base lr**: W = 16 vanishes") != std::string::npos);
  CHECK(study::controls_sentence(j).find("**SP, best lr**: W = 16 survives but shrinks") != std::string::npos);
}

TEST_CASE("fit-law study writes study.json and prints the headline, and names a run without a validation loss") {
  test::TempDir dir;
  const auto paths = write_all(dir.path() + "/runs", seeded_sweep());
  test::write_text(dir.path() + "/fit.json", fit_record(0, 8, 0.3).dump());
  std::string args;
  for (const auto& p : paths) args += " " + p;
  auto r = test::run(test::bin("fit-law") + " study --fit " + dir.path() + "/fit.json" + args + " -o " + dir.path() +
                     "/study.json --curves " + dir.path() + "/curves.csv");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("**Is there a depth penalty at this budget?** Yes") != std::string::npos);
  const json s = json::parse(test::read_text(dir.path() + "/study.json"));
  CHECK(s["arm"]["excess"][0]["excess"].get<double>() == Approx(0.3));
  CHECK(test::read_text(dir.path() + "/curves.csv").find("paper-log") == std::string::npos);  // its params are partial
  json bad = json::parse(test::read_text(paths[0]));
  bad.erase("final_val_loss");
  test::write_text(paths[0], bad.dump());
  r = test::run(test::bin("fit-law") + " study --fit " + dir.path() + "/fit.json" + args);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find(paths[0] + ": field 'final_val_loss': missing") != std::string::npos);
}
