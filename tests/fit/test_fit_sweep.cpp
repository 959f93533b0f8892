// fit-law sweep end to end: tables no one here prepared (their own column names, several
// checkpoints per run, no seeds), the depth test, the verdict, run resampling, bad input.
#include "catch.h"

#include <cmath>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"

using namespace shapelaw;
using nlohmann::json;

namespace {

std::string fitlaw() { return test::bin("fit-law"); }

// A published-style sweep: columns name, n_layers_x, d_model_x, tok_b (billions), val; every
// run logged at the same token counts unless `stagger`, loss from `law` plus a small
// deterministic per-run offset (no seeds).
template <class Law>
std::string sweep_csv(const std::vector<std::pair<int, int>>& shapes, Law law, bool stagger = false) {
  std::ostringstream os;
  os.precision(10);
  os << "name,n_layers_x,d_model_x,tok_b,val\n";
  int k = 0;
  for (auto [D, W] : shapes) {
    const double offset = 0.002 * ((k * 7) % 5 - 2);  // -0.004 .. 0.004, fixed per run
    for (int c = 1; c <= 6; ++c) {
      const double tb = 10.0 * c * (stagger ? 1.0 + 0.03 * k : 1.0);
      os << W << "x" << D << "," << D << "," << W << "," << tb << "," << law(D, W, tb * 1e9) + offset << "\n";
    }
    ++k;
  }
  return os.str();
}

const std::vector<std::pair<int, int>> kShapes = {{4, 256}, {12, 256}, {40, 256}, {6, 512},
                                                  {20, 512}, {60, 512}, {8, 1024}, {30, 1024}};

// Gemstones-like: deeper is better at every width, without limit
double no_penalty(int D, int W, double T) {
  return 1.6 + 4.0 / std::pow(W, 0.3) + 0.8 / std::pow(D, 0.5) + 2.0e3 / std::pow(12.0 * D * W * W, 0.45) +
         300.0 / std::pow(T, 0.3);
}

// the paper's shape: past kappa ln W, every layer costs gamma/W^mu
double with_penalty(int D, int W, double T) {
  const double dcrit = 2.43 * std::log(W);
  return no_penalty(D, W, T) + 1.5 * std::max(0.0, D - dcrit) / std::pow(W, 0.5);
}

const std::string kCols = " --col run=name --col depth=n_layers_x --col width=d_model_x --col tokens=tok_b*1e9 "
                          "--col loss=val";

json read_json(const std::string& path) { return json::parse(test::read_text(path)); }

}  // namespace

TEST_CASE("fit-law sweep: a table with its own column names and checkpoints, deeper always better, is refuted") {
  test::TempDir dir;
  const std::string csv = dir.path() + "/theirs.csv";
  test::write_text(csv, sweep_csv(kShapes, no_penalty));
  REQUIRE_OK(fitlaw() + " sweep " + csv + kCols + " -B 20 --no-plots --name theirs -o " + dir.path() + "/out");
  const json s = read_json(dir.path() + "/out/sweep.json");
  CHECK(s["format"] == "shapelaw.sweep");
  CHECK(s["name"] == "theirs");
  CHECK(s["data"]["runs"] == 8);
  CHECK(s["data"]["rows"] == 48);
  CHECK(s["data"]["rows_per_run_max"] == 6);
  CHECK(s["data"]["resample_unit"] == "run");
  const json& widths = s["depth_tests"]["widths"];
  REQUIRE(widths.size() == 3);
  for (const auto& w : widths) {
    INFO(w.dump());
    CHECK(w["matching"] == "logged");
    CHECK(w["tokens"].size() == 6);
    CHECK(w["best_depth"].back() == w["depths"].back());  // the deepest wins
    for (const auto& st : w["steps"]) CHECK(st["sign"] == -1);
    CHECK(w["past_dcrit_winner"] == w["depths"].back());
    CHECK(w["worse_past_dcrit"].empty());
  }
  CHECK(s["depth_tests"]["noise"]["assumed"] == true);
  CHECK(s["depth_tests"]["widths_with_past_dcrit"] == 3);
  CHECK(s["depth_tests"]["widths_with_penalty"] == 0);
  // every law, and the rivals, out of sample
  std::set<std::string> names;
  for (const auto& l : s["laws"]) {
    names.insert(l["name"].get<std::string>());
    CHECK(l["loo_rmse"].is_number());
  }
  CHECK(names.count("gemstones") == 1);
  CHECK(names.count("inverse-depth") == 1);
  CHECK(names.count("paper-log") == 1);
  CHECK(s["verdict"] == "refuted");
  const std::string readme = test::read_text(dir.path() + "/out/README.md");
  CHECK(readme.find("**Verdict: refuted**") != std::string::npos);
  CHECK(readme.find("past the paper's D_crit, has a lower loss than every shallower depth at 6 matched token counts "
                    "(logged)") != std::string::npos);
  const json fit = read_json(dir.path() + "/out/fit.json");
  CHECK(fit["options"]["resample_unit"] == "run");
  CHECK(fit["input"]["groups"] == 8);
}

TEST_CASE("fit-law sweep: a penalty past D_crit is seen by the depth test, and runs logged apart are interpolated") {
  test::TempDir dir;
  const std::string csv = dir.path() + "/penalty.csv";
  test::write_text(csv, sweep_csv(kShapes, with_penalty, true));
  REQUIRE_OK(fitlaw() + " sweep " + csv + kCols + " -B 20 --no-plots -o " + dir.path() + "/out");
  const json s = read_json(dir.path() + "/out/sweep.json");
  const json& widths = s["depth_tests"]["widths"];
  REQUIRE(widths.size() == 3);
  for (const auto& w : widths) {
    INFO(w.dump());
    CHECK(w["matching"] == "interpolated");
    CHECK(!w["worse_past_dcrit"].empty());
    CHECK(w["steps"].back()["sign"] == 1);
  }
  CHECK(s["depth_tests"]["widths_with_penalty"] == 3);
  CHECK(s["verdict"] != "refuted");
}

TEST_CASE("fit-law --col run: rows that share a run are resampled and left out as whole runs, and the report says so") {
  test::TempDir dir;
  const std::string csv = dir.path() + "/theirs.csv";
  test::write_text(csv, sweep_csv(kShapes, no_penalty));
  const auto r = test::run(fitlaw() + " " + csv + kCols + " -m chinchilla -B 10 --no-profile -o " + dir.path() +
                           "/fit.json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("bootstrap resamples and leave-one-out leaves out whole runs (8 runs)") != std::string::npos);
  const json fit = read_json(dir.path() + "/fit.json");
  CHECK(fit["options"]["resample_unit"] == "run");
  CHECK(fit["models"][0]["bootstrap"]["unit"] == "run");
  CHECK(fit["input"]["warnings"].empty());  // checkpoints of one run are not duplicate runs
  // without a run column every row is its own unit
  REQUIRE_OK(fitlaw() + " " + csv + " --col run=none --col depth=n_layers_x --col width=d_model_x --col tokens=tok_b*1e9 "
             "--col loss=val -m chinchilla -B 10 --no-profile --no-loo -o " + dir.path() + "/rows.json");
  CHECK(read_json(dir.path() + "/rows.json")["options"]["resample_unit"] == "row");
}

TEST_CASE("fit-law sweep: bad tables fail with one line naming file, line and field") {
  test::TempDir dir;
  auto expect = [&](const std::string& name, const std::string& text, const std::string& extra,
                    const std::vector<std::string>& needles) {
    const std::string csv = dir.path() + "/" + name + ".csv";
    test::write_text(csv, text);
    const auto r = test::run(fitlaw() + " sweep " + csv + extra + " --no-plots -B 5 -o " + dir.path() + "/o-" + name);
    INFO(name << ": " << r.output);
    CHECK(r.exit_code == 1);
    for (const auto& n : needles) CHECK(r.output.find(n) != std::string::npos);
  };
  expect("nodepth", "run,width,tokens,loss\na,256,1e9,3.1\nb,512,1e9,3.0\n", "",
         {"nodepth.csv:2: field 'depth'", "--col depth="});
  expect("onedepth", "run,depth,width,tokens,loss\na,4,256,1e9,3.1\nb,8,512,1e9,3.0\n", "",
         {"onedepth.csv: field 'depth': every width has one depth"});
  expect("units", "run,depth,width,tokens,loss\na,4,256,10,3.1\na,4,256,2e10,3.0\nb,8,256,1e10,3.0\n", "",
         {"units.csv:3: field 'tokens'", "mixed units", "units.csv:2"});
  expect("dup", "run,depth,width,tokens,loss\na,4,256,1e10,3.1\na,4,256,1e10,3.0\nb,8,256,1e10,3.0\n", "",
         {"dup.csv:3: field 'tokens'", "second row", "dup.csv:2"});
  expect("shape", "run,depth,width,tokens,loss\na,4,256,1e10,3.1\na,8,256,2e10,3.0\nb,8,256,1e10,3.0\n", "",
         {"shape.csv:3: field 'depth'/'width'", "run 'a'", "shape.csv:2"});
  expect("bestof", "run,depth,width,tokens,loss,lr\na,4,256,1e10,3.1,1\na,4,256,2e10,3.0,1\nb,8,256,1e10,3.0,1\n",
         " --best-of lr", {"--best-of lr: rows share runs (checkpoints)"});
  // --col names a column the table does not have: the loader's own message
  expect("nocol", "run,depth,width,tokens,loss\na,4,256,1e10,3.1\n", " --col loss=val", {"nocol.csv:2", "'val'"});
}

TEST_CASE("fit-law overview: one row per study, and the sums across them in one paragraph") {
  test::TempDir dir;
  test::write_text(dir.path() + "/a.csv", sweep_csv(kShapes, no_penalty));
  test::write_text(dir.path() + "/b.csv", sweep_csv(kShapes, with_penalty));
  REQUIRE_OK(fitlaw() + " sweep " + dir.path() + "/a.csv" + kCols + " -B 5 --no-plots --name deeper-wins -o " +
             dir.path() + "/a");
  // --seed-sd: an assumed noise so large that no difference is beyond it
  REQUIRE_OK(fitlaw() + " sweep " + dir.path() + "/b.csv" + kCols + " -B 5 --no-plots --seed-sd 10 --name noisy -o " +
             dir.path() + "/b");
  const json b = read_json(dir.path() + "/b/sweep.json");
  CHECK(b["depth_tests"]["noise"]["seed_sd"] == 10.0);
  CHECK(b["depth_tests"]["widths_with_penalty"] == 0);
  for (const auto& w : b["depth_tests"]["widths"])
    for (const auto& st : w["steps"]) CHECK(st["sign"] == 0);
  const auto r = test::run_stdout(fitlaw() + " overview " + dir.path() + "/a/sweep.json " + dir.path() +
                                  "/b/sweep.json --link-from " + dir.path());
  INFO(r.output << r.errors);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("| [deeper-wins](a/README.md) | 256–1024 | 4–60 |") != std::string::npos);
  CHECK(r.output.find("| [noisy](b/README.md) |") != std::string::npos);
  CHECK(r.output.find("**Across 2 studies (W 256–1024):**") != std::string::npos);
  CHECK(r.output.find("At 6 widths a run past D_crit can be compared with a shallower run") != std::string::npos);
  // not a sweep.json: one line naming the file and the field
  test::write_text(dir.path() + "/fit.json", "{\"format\": \"shapelaw.fit\"}");
  const auto bad = test::run(fitlaw() + " overview " + dir.path() + "/fit.json");
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("fit.json: field 'format': not a sweep.json") != std::string::npos);
}
