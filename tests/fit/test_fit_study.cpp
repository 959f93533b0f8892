// fit-law on study-shaped inputs: the same answer whatever the input order and thread
// count, loud when a law is not identified or did not converge, equivalent laws reported
// as one, --best-of over learning-rate sweeps, third-party params/tokens/loss tables,
// complete CSV output and '-' as stdout.
#include "catch.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "util/atomic_file.h"
#include "util/csv.h"

using namespace shapelaw;
using nlohmann::json;

namespace {

std::string fitlaw() { return test::bin("fit-law"); }

std::string g17(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The micro-study's grid (D in {1,2,4,8,16} x W in {16,32,64}, one token budget) with
// losses on U-curves in depth like the measured ones (report/README.md after `make`), as summary.json
// files in dir/w{W}-d{D}/; returns their paths in grid order (as the pipeline lists them).
std::vector<std::string> write_micro_grid(const std::string& dir) {
  const double curves[3][5] = {{5.2595, 5.2668, 5.2902, 5.3475, 5.4669},
                               {4.9829, 4.9957, 5.0503, 5.1491, 5.3720},
                               {4.8711, 4.8522, 4.8996, 4.9874, 5.1440}};
  const int widths[3] = {16, 32, 64}, depths[5] = {1, 2, 4, 8, 16};
  std::vector<std::string> paths;
  for (int w = 0; w < 3; ++w)
    for (int k = 0; k < 5; ++k) {
      const int D = depths[k], W = widths[w];
      const double non_emb = D * (12.0 * W * W + 4.0 * W) + 2.0 * W;
      json s = {{"format", "shapelaw.summary"}, {"version", 1},
                {"run_id", "w" + std::to_string(W) + "-d" + std::to_string(D)}, {"depth", D}, {"width", W},
                {"vocab_size", 2048}, {"tokens", 1179648},
                {"params", {{"total", non_emb + 2 * 2048.0 * W}, {"non_embedding", non_emb}}},
                {"final_val_loss", curves[w][k] + 0.004 * std::sin(3.1 * k + 0.7 * W)},
                {"config", {{"lr", 3e-3}, {"seed", 42}, {"out", dir}, {"model", {{"depth", D}, {"width", W}}}}}};
      const std::string run = dir + "/w" + std::to_string(W) + "-d" + std::to_string(D);
      std::filesystem::create_directories(run);
      test::write_text(run + "/summary.json", s.dump());
      paths.push_back(run + "/summary.json");
    }
  return paths;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += " " + x;
  return s;
}

json fit_json(const std::string& args, const std::string& out) {
  auto r = test::run(fitlaw() + " " + args + " -o " + out + " --format json > /dev/null");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return json::parse(read_file(out));
}

// What must not depend on the input order or the thread count.
json answer(const json& rec) {
  json a = {{"input_sha256", rec["input_sha256"]}, {"selected", rec["selected_model"]},
            {"comparison", rec["comparison"]}, {"skipped", rec["skipped_models"]}, {"warnings", rec["warnings"]},
            {"files", rec["input"]["files"]}};
  for (const auto& m : rec["models"])
    a[m["name"].get<std::string>()] = {{"params", m["params"]}, {"metrics", m["metrics"]}, {"fit", m["fit"]},
                                       {"identification", m["identification"]},
                                       {"bootstrap_draws", m["bootstrap_draws"]}};
  return a;
}

}  // namespace

TEST_CASE("the micro grid in grid order, sorted, reversed, shuffled and on 1 or 2 threads gives one fit.json") {
  test::TempDir dir;
  std::vector<std::string> grid = write_micro_grid(dir.path() + "/runs");
  std::vector<std::string> reversed(grid.rbegin(), grid.rend()), shuffled = grid;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  const std::string opts = " -B 20 --optimal-draws 5 --holdout 0.2 ";
  const json ref = fit_json(joined(grid) + opts + "-j 2", dir.path() + "/grid.json");
  REQUIRE(ref["models"].size() >= 3);
  const json a = answer(ref);
  CHECK(answer(fit_json(dir.path() + "/runs" + opts + "-j 2", dir.path() + "/dir.json")) == a);
  CHECK(answer(fit_json(joined(reversed) + opts + "-j 2", dir.path() + "/rev.json")) == a);
  CHECK(answer(fit_json(joined(shuffled) + opts + "-j 1", dir.path() + "/shuf.json")) == a);
  // the two laws that are one law at constant T are reported as one, not as a tie
  bool folded = false;
  for (const auto& s : ref["skipped_models"])
    if (s["name"] == "paper-log-E") {
      folded = true;
      CHECK(s["equivalent_to"] == "paper-log");
    }
  CHECK(folded);
  for (const auto& m : ref["models"]) CHECK(m["name"] != "paper-log-E");
}

TEST_CASE("equivalent laws: at constant T kaplan-E and chinchilla are no-phi, with T varying they are fitted") {
  test::TempDir dir;
  std::string csv = dir.path() + "/t.csv", varied = dir.path() + "/v.csv";
  std::string body = "run,depth,width,loss,tokens\n", vbody = body;
  int i = 0;
  for (int W : {64, 128, 256})
    for (int D : {2, 4, 8}) {
      const double N = 12.0 * D * W * W, T = 1e8 * (1 + i % 3);
      const double L = 1.7 + 400 / std::pow(N, 0.34) + 0.002 * std::sin(5.0 * i);
      body += "r" + std::to_string(i) + "," + std::to_string(D) + "," + std::to_string(W) + "," + g17(L) + ",1e8\n";
      vbody += "r" + std::to_string(i) + "," + std::to_string(D) + "," + std::to_string(W) + "," +
               g17(L + 400 / std::pow(T, 0.28)) + "," + g17(T) + "\n";
      ++i;
    }
  test::write_text(csv, body);
  test::write_text(varied, vbody);
  json j = fit_json(csv + " -m no-phi,kaplan-E,chinchilla -B 0 --no-loo --no-profile", dir.path() + "/f.json");
  REQUIRE(j["models"].size() == 1);
  CHECK(j["models"][0]["name"] == "no-phi");
  REQUIRE(j["skipped_models"].size() == 2);
  for (const auto& s : j["skipped_models"]) CHECK(s["equivalent_to"] == "no-phi");
  json v = fit_json(varied + " -m no-phi,kaplan-E,chinchilla -B 0 --no-loo --no-profile", dir.path() + "/g.json");
  CHECK(v["models"].size() == 3);
  CHECK(v["skipped_models"].empty());
}

TEST_CASE("a law the data does not identify is marked, named per parameter, and caveats the selection") {
  // depth helps a little beyond N in the data: the paper law's penalty (gamma >= 0) goes to 0,
  // and with it mu and kappa are free (the objective does not depend on them at all)
  test::TempDir dir;
  std::string csv = dir.path() + "/flat.csv";
  std::string body = "run,depth,width,loss\n";
  int i = 0;
  for (int W : {64, 128, 256, 512})
    for (int D : {2, 4, 8, 16}) {
      const double N = 12.0 * D * W * W;
      body += "r" + std::to_string(i) + "," + std::to_string(D) + "," + std::to_string(W) + "," +
              g17(1.5 + 40 / std::pow(N, 0.3) - 0.01 * D + 0.002 * std::sin(3.0 * i)) + "\n";
      ++i;
    }
  test::write_text(csv, body);
  const std::string out = dir.path() + "/f.json";
  auto r = test::run(fitlaw() + " " + csv + " -m paper-log,no-phi -B 0 --no-loo --no-profile --format csv -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  const json& pl = j["models"][0];
  REQUIRE(pl["name"] == "paper-log");
  CHECK(pl["params"]["gamma"]["estimate"].get<double>() == Approx(0).margin(1e-9));
  CHECK(pl["identification"]["status"] == "weakly_identified");
  const json& ni = pl["identification"]["not_identified"];
  CHECK(std::find(ni.begin(), ni.end(), "mu") != ni.end());
  CHECK(std::find(ni.begin(), ni.end(), "kappa") != ni.end());
  CHECK(std::find(ni.begin(), ni.end(), "s") == ni.end());  // the capacity slope (A before Box-Cox)
  CHECK(j["models"][1]["identification"]["status"] == "identified");
  // named on stderr even with --format csv, and in the CSV itself
  CHECK_THAT(r.output, Catch::Contains("fit-law: warning: paper-log: "));
  CHECK_THAT(r.output, Catch::Contains("kappa"));
  CHECK_THAT(r.output, Catch::Contains("not identified: objective within 1e-09"));
  CHECK_THAT(r.output, Catch::Contains("paper-log,identification,mu,,,"));
  CHECK(std::any_of(j["warnings"].begin(), j["warnings"].end(),
                    [](const json& w) { return w.get<std::string>().find("not identified") != std::string::npos; }));
  // whichever wins on AICc, the unidentified law is never the identified selection
  CHECK(j["selected_identified_model"] != "paper-log");
  if (j["selected_model"] == "paper-log") {
    CHECK(j["selected_identified_model"] == "no-phi");
    CHECK(!j["comparison"]["caveats"].empty());
  }
}

TEST_CASE("a fit that did not converge is loud in every format and in its likelihood-ratio test") {
  test::TempDir dir;
  write_micro_grid(dir.path() + "/runs");
  const std::string out = dir.path() + "/f.json";
  for (const char* format : {"table", "csv", "json"}) {
    auto r = test::run(fitlaw() + " " + dir.path() + "/runs -m paper-log,no-phi -B 0 --no-loo --no-profile --holdout 0"
                                  " --max-iterations 1 --format " + format + " -o " + out);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("fit-law: warning: paper-log: the best of"));
    CHECK_THAT(r.output, Catch::Contains("did not converge"));
    if (std::string(format) != "json") CHECK_THAT(r.output, Catch::Contains("do not use it"));
  }
  json j = json::parse(read_file(out));
  REQUIRE(j["comparison"]["likelihood_ratio"].size() == 1);
  CHECK(j["comparison"]["likelihood_ratio"][0]["converged"]["full"] == false);
  CHECK(j["comparison"]["likelihood_ratio"][0].contains("warning"));
  CHECK(j["comparison"]["table"][0]["converged"] == false);
}

namespace {

// A learning-rate sweep: `shapes` configurations x lrs x seeds, summary.json per run. The
// loss is lowest at lr_best(shape) (a parabola in ln lr); seed noise is small.
struct Sweep {
  int D, W;
  double lr_best;
};
std::vector<std::string> write_sweep(const std::string& dir, const std::vector<Sweep>& shapes,
                                     const std::vector<double>& lrs, int seeds, bool min_lr_ratio = true) {
  std::vector<std::string> paths;
  for (const auto& s : shapes)
    for (double lr : lrs)
      for (int seed = 0; seed < seeds; ++seed) {
        const double N = 12.0 * s.D * s.W * s.W;
        const double L = 2 + 30 / std::pow(N, 0.25) + 0.05 * std::pow(std::log(lr / s.lr_best), 2) +
                         0.003 * std::sin(11.0 * seed + s.D + lr * 100);
        char name[96];
        std::snprintf(name, sizeof name, "d%d-w%d-lr%g-s%d", s.D, s.W, lr, seed);
        json config = {{"lr", lr}, {"min_lr", lr * 0.1}, {"seed", 42 + seed}, {"tokens", 1000000},
                       {"out", dir + "/" + name}, {"run_id", name}, {"threads", 1 + seed},
                       {"model", {{"depth", s.D}, {"width", s.W}}}};
        if (min_lr_ratio) config["min_lr_ratio"] = 0.1;
        json sj = {{"format", "shapelaw.summary"}, {"version", 1}, {"run_id", name}, {"depth", s.D}, {"width", s.W},
                   {"tokens", 1000000}, {"final_val_loss", L}, {"config", config}};
        std::filesystem::create_directories(dir + "/" + name);
        test::write_text(dir + "/" + name + "/summary.json", sj.dump());
        paths.push_back(dir + "/" + name + "/summary.json");
      }
  return paths;
}

}  // namespace

TEST_CASE("best-of lr keeps each configuration's best learning rate, flags the edge, and is order-independent") {
  test::TempDir dir;
  const std::vector<Sweep> shapes = {{2, 64, 3e-3}, {4, 64, 3e-3}, {4, 128, 1e-3}, {8, 128, 1e-2}, {8, 256, 5e-2}};
  auto paths = write_sweep(dir.path() + "/runs", shapes, {1e-3, 3e-3, 1e-2}, 2);
  const std::string opts = " -m kaplan-E --best-of lr -B 10 --no-profile ";
  const json j = fit_json(joined(paths) + opts, dir.path() + "/f.json");
  const json& b = j["best_of"];
  CHECK(b["key"] == "lr");
  CHECK(b["rows_in"] == 30);
  CHECK(b["rows_kept"] == 10);
  REQUIRE(b["configurations"].size() == 5);
  CHECK(j["input"]["rows"] == 10);
  // the kept seeds of each configuration are replicates
  CHECK(j["replicates"]["configurations"] == 5);
  CHECK(j["replicates"]["df"] == 5);
  std::map<std::pair<int, int>, json> by_shape;
  for (const auto& c : b["configurations"])
    by_shape[{c["shape"]["depth"].get<int>(), c["shape"]["width"].get<int>()}] = c;
  CHECK(by_shape[{2, 64}]["chosen"].get<double>() == 3e-3);
  CHECK(by_shape[{2, 64}]["edge"].is_null());
  CHECK(by_shape[{4, 128}]["chosen"].get<double>() == 1e-3);
  CHECK(by_shape[{4, 128}]["edge"] == "smallest");
  CHECK(by_shape[{8, 128}]["edge"] == "largest");
  CHECK(by_shape[{8, 256}]["chosen"].get<double>() == 1e-2);
  CHECK(by_shape[{8, 256}]["edge"] == "largest");
  CHECK(b["at_edge"] == 3);
  const json& cands = by_shape[{2, 64}]["candidates"];
  REQUIRE(cands.size() == 3);
  CHECK(cands[1]["value"].get<double>() == 3e-3);
  CHECK(cands[1]["n_runs"] == 2);
  CHECK(cands[1]["mean_val_loss"].get<double>() < cands[0]["mean_val_loss"].get<double>());
  CHECK(cands[1]["mean_val_loss"].get<double>() < cands[2]["mean_val_loss"].get<double>());
  // on stderr and in markdown
  auto md = test::run(fitlaw() + joined(paths) + opts + "--format markdown");
  CHECK_THAT(md.output, Catch::Contains("fit-law: warning: --best-of lr: D=4 W=128"));
  CHECK_THAT(md.output, Catch::Contains("at the edge: widen the sweep"));
  CHECK_THAT(md.output, Catch::Contains("best of lr: 5 configurations, 10 of 30 rows kept, 3 with the best value at the edge"));
  // shuffled and reversed input: the same record
  std::vector<std::string> shuffled = paths;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(3));
  const json k = fit_json(joined(shuffled) + opts, dir.path() + "/g.json");
  CHECK(k["best_of"] == j["best_of"]);
  CHECK(answer(k) == answer(j));
  CHECK(answer(fit_json(dir.path() + "/runs" + opts, dir.path() + "/h.json")) == answer(j));
}

TEST_CASE("without --best-of, runs that differ in lr are not called replicates, and one lr only is no sweep") {
  test::TempDir dir;
  write_sweep(dir.path() + "/runs", {{2, 64, 3e-3}, {4, 64, 3e-3}, {4, 128, 3e-3}, {8, 128, 3e-3}}, {1e-3, 3e-3}, 1);
  auto r = test::run(fitlaw() + " " + dir.path() + "/runs -m kaplan-E -B 0 --no-loo --no-profile");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("differ in lr, min_lr: they are not replicates; to fit the best of each sweep use "
                                       "--best-of lr"));
  // out, run_id and threads differ too, but they do not change the math
  CHECK_THAT(r.output, !Catch::Contains("threads"));
  // min_lr follows lr only when min_lr_ratio says so: otherwise it is a configuration key
  test::TempDir other;
  write_sweep(other.path() + "/runs", {{2, 64, 3e-3}, {4, 64, 3e-3}, {4, 128, 3e-3}, {8, 128, 3e-3}}, {1e-3, 3e-3}, 1,
              false);
  const json j = fit_json(other.path() + "/runs -m kaplan-E -B 0 --no-loo --no-profile --best-of lr",
                          other.path() + "/f.json");
  CHECK(j["best_of"]["configurations"].size() == 8);
  CHECK(j["best_of"]["single_candidate"] == 8);
  auto s = test::run(fitlaw() + " " + other.path() + "/runs -m kaplan-E -B 0 --no-loo --no-profile --best-of lr");
  CHECK_THAT(s.output, Catch::Contains("one value only (0.001): not a sweep"));
  // the same configuration and seed twice is named
  std::filesystem::copy(dir.path() + "/runs/d2-w64-lr0.001-s0", dir.path() + "/runs/copy");
  auto twice = test::run(fitlaw() + " " + dir.path() + "/runs -m kaplan-E -B 0 --no-loo --no-profile");
  CHECK_THAT(twice.output, Catch::Contains("have the same binding configuration, seed included: the same run twice?"));
  std::filesystem::remove_all(dir.path() + "/runs/copy");
  // a summary without the key
  auto bad = test::run(fitlaw() + " " + dir.path() + "/runs -m kaplan-E -B 0 --best-of weight_decay");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("--best-of weight_decay: the run's configuration has no 'weight_decay'"));
}

TEST_CASE("binding_config is preferred to config when a summary has it") {
  test::TempDir dir;
  auto paths = write_sweep(dir.path() + "/runs", {{2, 64, 3e-3}, {4, 64, 3e-3}, {4, 128, 3e-3}}, {1e-3, 3e-3}, 1);
  // binding_config says both lrs ran at 1e-3: one candidate each, two runs
  for (const auto& p : paths) {
    json s = json::parse(read_file(p));
    s["binding_config"] = {{"lr", 1e-3}, {"seed", 1}, {"model", s["config"]["model"]}};
    test::write_text(p, s.dump());
  }
  const json j = fit_json(dir.path() + "/runs -m kaplan-E -B 0 --no-loo --no-profile --best-of lr", dir.path() + "/f.json");
  REQUIRE(j["best_of"]["configurations"].size() == 3);
  CHECK(j["best_of"]["configurations"][0]["candidates"][0]["n_runs"] == 2);
}

namespace {

// A published-style ladder: params,tokens,loss only, from Chinchilla's law with 0.5% noise.
std::string chinchilla_ladder() {
  std::string csv = "params,tokens,loss\n";
  std::mt19937_64 rng(1);
  std::normal_distribution<double> z(0, 0.005);
  for (double N : {4e7, 1e8, 3e8, 1e9, 3e9})
    for (double T : {2e9, 8e9, 3e10, 1e11}) {
      const double L = (1.69 + 406.4 / std::pow(N, 0.34) + 410.7 / std::pow(T, 0.28)) * std::exp(z(rng));
      csv += g17(N) + "," + g17(T) + "," + g17(L) + "\n";
    }
  return csv;
}

}  // namespace

TEST_CASE("a third-party params,tokens,loss table fits without depth or width, N is the mapped column") {
  test::TempDir dir;
  const std::string csv = dir.path() + "/ladder.csv", out = dir.path() + "/f.json";
  test::write_text(csv, chinchilla_ladder());
  auto r = test::run(fitlaw() + " " + csv + " -m chinchilla --col params=params --col tokens=tokens --col loss=loss" +
                     " -B 50 --optimal-draws 20 -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("N: --n auto chose total: the mapped column --col params=params"));
  CHECK_THAT(r.output, !Catch::Contains("D*"));
  CHECK_THAT(r.output, Catch::Contains("the data has no depth and width: the optimal shape is not determined"));
  json j = json::parse(read_file(out));
  CHECK(j["options"]["n_resolved"] == "total");
  CHECK(j["input"]["shapes"] == false);
  CHECK(!j["input"]["range"].contains("W"));
  CHECK(j["input"]["range"]["N"] == json({4e7, 3e9}));
  const json& m = j["models"][0];
  CHECK(m["params"]["alpha"]["estimate"].get<double>() == Approx(0.34).margin(0.05));
  CHECK(m["params"]["beta"]["estimate"].get<double>() == Approx(0.28).margin(0.05));
  const json& co = m["derived"]["compute_optimal"];
  CHECK(co["shapes"] == false);
  CHECK(co["slopes"]["N"].is_number());
  CHECK(!co["slopes"].contains("D_deepest"));
  CHECK(!co["points"][0].contains("D_deepest"));
  // every law: those with a depth penalty are skipped with the reason
  json all = fit_json(csv + " -B 0 --no-loo --no-profile --optimal-draws 0", dir.path() + "/all.json");
  int skipped_for_shape = 0;
  for (const auto& s : all["skipped_models"])
    if (s["reason"] == "needs depth and width; the rows have none") ++skipped_for_shape;
  CHECK(skipped_for_shape == 3);  // paper-log, paper-power, paper-log-E
  CHECK(all["models"].size() == 4);  // no-phi, kaplan, kaplan-E, chinchilla
  // predictions: empty depth and width, residual = observed - predicted
  auto p = test::run_stdout(fitlaw() + " " + csv + " -m chinchilla -B 0 --no-loo --predictions -");
  INFO(p.errors);
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  const CsvTable t = parse_csv(p.output, "stdout");
  REQUIRE(t.records.size() == 20);
  for (const auto& rec : t.records) {
    CHECK(rec.fields[t.column({"depth"})].empty());
    const double obs = std::stod(rec.fields[t.column({"observed"})]), pred = std::stod(rec.fields[t.column({"predicted"})]);
    CHECK(std::stod(rec.fields[t.column({"residual"})]) == Approx(obs - pred).epsilon(1e-12));
  }
}

TEST_CASE("format csv carries the whole record and parses back, '-' means stdout, --help shows defaults") {
  test::TempDir dir;
  write_micro_grid(dir.path() + "/runs");
  const std::string out = dir.path() + "/f.json";
  auto r = test::run_stdout("cd " + dir.path() + " && " + fitlaw() + " runs -B 20 --optimal-draws 5 --format csv -o " + out);
  INFO(r.errors);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const json j = json::parse(read_file(out));
  const CsvTable t = parse_csv(r.output, "stdout");
  REQUIRE(t.header.size() == 10);
  CHECK(t.header.back() == "text");
  std::map<std::string, int> kinds;
  for (const auto& rec : t.records) {
    REQUIRE(rec.fields.size() == 10);
    ++kinds[rec.fields[1]];
    for (int c = 3; c <= 8; ++c)
      if (!rec.fields[c].empty()) {
        size_t used = 0;
        std::stod(rec.fields[c], &used);
        CHECK(used == rec.fields[c].size());
      }
    if (rec.fields[1] == "param" && rec.fields[0] == "paper-log")
      CHECK(std::stod(rec.fields[3]) == j["models"][0]["params"][rec.fields[2]]["estimate"].get<double>());
    if (rec.fields[1] == "selected" && rec.fields[2] == "selected_model") CHECK(rec.fields[9] == j["selected_model"]);
    if (rec.fields[1] == "lrt" && rec.fields[2] == "statistic")
      for (const auto& l : j["comparison"]["likelihood_ratio"])
        if (l["full"] == rec.fields[0]) CHECK(std::stod(rec.fields[3]) == l["statistic"].get<double>());
  }
  for (const char* k : {"param", "profile", "identification", "fit", "metric", "derived", "comparison", "lrt",
                        "selected", "skipped", "note", "not_identifiable", "input", "range"}) {
    INFO(k);
    CHECK(kinds[k] > 0);
  }
  // '-' writes to stdout, never a file named '-'
  auto p = test::run_stdout("cd " + dir.path() + " && " + fitlaw() + " runs -m kaplan -B 0 --predictions -");
  INFO(p.errors);
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK(p.output.rfind("model,run,source,line,", 0) == 0);
  auto o = test::run_stdout("cd " + dir.path() + " && " + fitlaw() + " runs -m kaplan -B 0 -o -");
  INFO(o.errors);
  INFO(o.output);
  REQUIRE(o.exit_code == 0);
  CHECK(json::parse(o.output)["format"] == "shapelaw.fit");
  CHECK(!std::filesystem::exists(dir.path() + "/-"));
  auto both = test::run("cd " + dir.path() + " && " + fitlaw() + " runs -m kaplan -o - --predictions -");
  CHECK(both.exit_code == 1);
  auto h = test::run(fitlaw() + " --help");
  // CLI11 prints a default as "=1000" (Debian 12) or "[1000]" (Debian 13)
  CHECK_THAT(h.output, Catch::Contains("=1000") || Catch::Contains("[1000]"));     // -B
  CHECK_THAT(h.output, Catch::Contains("=0.001") || Catch::Contains("[0.001]"));  // --huber-delta
  CHECK_THAT(h.output, Catch::Contains("=log") || Catch::Contains("[log]"));      // --space
}

TEST_CASE("one CSV reader: a quoted field with a comma, a quote and a newline reads the same in fit-law") {
  test::TempDir dir;
  const std::string csv = dir.path() + "/q.csv";
  test::write_text(csv, "# a comment line\nrun,depth,width,loss\n\"a, \"\"first\"\"\nrun\",2,256,4.30\r\n"
                        "b,4,256,4.10\nc,8,512,3.62\nd,16,512,3.44\ne,8,1024,3.40\n");
  const json j = fit_json(csv + " -m kaplan -B 0 --no-loo", dir.path() + "/f.json");
  CHECK(j["input"]["rows"] == 5);
  auto p = test::run_stdout(fitlaw() + " " + csv + " -m kaplan -B 0 --no-loo --predictions -");
  INFO(p.errors);
  const CsvTable t = parse_csv(p.output, "stdout");
  bool found = false;
  for (const auto& r : t.records) found = found || r.fields[1] == "a, \"first\"\nrun";
  CHECK(found);
}

TEST_CASE("best-of on a table: an lr column, configurations from the other columns") {
  test::TempDir dir;
  std::string csv = "params,tokens,lr,seed,loss\n";
  for (double N : {1e7, 3e7, 1e8, 3e8})
    for (double lr : {1e-3, 3e-3, 1e-2})
      for (int s : {1, 2})
        csv += g17(N) + ",2e9," + g17(lr) + "," + std::to_string(s) + "," +
               g17(2 + 300 / std::pow(N, 0.3) + 0.05 * std::pow(std::log(lr / 3e-3), 2) + 0.002 * s) + "\n";
  test::write_text(dir.path() + "/lr.csv", csv);
  auto plain = test::run(fitlaw() + " " + dir.path() + "/lr.csv -m kaplan-E -B 0 --no-loo --no-profile");
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.output, Catch::Contains("params=1e+07 T=2e+09 (runs "));
  CHECK_THAT(plain.output, Catch::Contains("differ in lr: they are not replicates"));
  const json j = fit_json(dir.path() + "/lr.csv -m kaplan-E --best-of lr -B 0 --no-loo --no-profile", dir.path() + "/f.json");
  CHECK(j["best_of"]["rows_kept"] == 8);
  for (const auto& c : j["best_of"]["configurations"]) {
    CHECK(c["chosen"].get<double>() == 3e-3);
    CHECK(c["edge"].is_null());
    CHECK(c["configuration"] == json({{"params", c["shape"]["params"]}, {"tokens", 2e9}}));
  }
  CHECK(j["replicates"]["df"] == 4);
}
