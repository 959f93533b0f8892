// scripts/check-reproduced (`make check-reproduced`) on tiny runs: the same runs again are
// "bit-identical", a moved loss or other weights are named with the difference, a missing
// or extra run is said, and runs of the native kernel set are refused.
#include "catch.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "test_support.h"

using namespace shapelaw;
namespace fs = std::filesystem;

namespace {

void train_into(const std::string& shards, const std::string& runs, const std::string& run, const std::string& extra) {
  auto r = test::run(test::bin("train") + " --data " + shards + " --out " + runs + "/" + run +
                     " --depth 1 --width 16 --head-dim 16 --seq-len 16 --micro-batch 4 --batch-tokens 64"
                     " --steps 6 --warmup-steps 1 --threads 1 --peak-flops 1e9 --val-tokens 256 --log-every 0"
                     " --checkpoint-every 0 --block-impl fused" + extra);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
}

}  // namespace

TEST_CASE("check-reproduced: bit-identical runs pass, a changed or missing run is named, native runs are refused") {
  test::TempDir dir;
  const std::string shards = dir.path() + "/shards", expected = dir.path() + "/expected/study.json";
  REQUIRE(test::run(test::bin("train") + " --make-synthetic-shards " + shards +
                    " --synthetic-tokens 200000 --vocab-size 128").exit_code == 0);
  const std::string first = dir.path() + "/first/runs", again = dir.path() + "/again/runs";
  for (const std::string& runs : {first, again}) {
    train_into(shards, runs, "d1", "");
    train_into(shards, runs, "d1-s7", " --seed 7");
  }
  const std::string script = test::source("scripts/check-reproduced");
  auto r = test::run(script + " --write --expected " + expected + " " + first);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto file = nlohmann::json::parse(test::read_text(expected));
  CHECK(file.at("format") == "shapelaw.expected-runs");
  CHECK(file.at("runs").size() == 2);
  CHECK(file.at("runs").at("d1").at("params_sha256").get<std::string>().size() == 64);

  // the same flags trained again (as on another machine with the fixed set): the same bits
  r = test::run(script + " --expected " + expected + " " + again);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("bit-identical: all 2 runs"));
  // make's entry point, on a study directory
  r = test::run("make -s -C " + test::source("") + " check-reproduced REPRODUCE_STUDY=" + dir.path() +
                "/again EXPECTED=" + expected);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("bit-identical"));

  // another seed under d1's name: other losses and weights, each with its difference
  fs::remove_all(again + "/d1");
  train_into(shards, again, "d1", " --seed 8 --run-id d1");
  r = test::run(script + " --expected " + expected + " " + again);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("d1: differs") && Catch::Contains("final_val_loss: expected ") &&
                           Catch::Contains("(difference ") && Catch::Contains("final weights sha256") &&
                           Catch::Contains("not bit-identical: 1 of the 2 expected runs"));
  CHECK_THAT(r.output, !Catch::Contains("d1-s7: differs"));
  // a run missing here, one not in the file
  fs::rename(again + "/d1", again + "/d2");
  {
    auto s = nlohmann::json::parse(test::read_text(again + "/d2/summary.json"));
    s["run_id"] = "d2";
    test::write_text(again + "/d2/summary.json", s.dump());
  }
  r = test::run(script + " --expected " + expected + " " + again);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("d1: missing on this machine") && Catch::Contains("d2: not in the expected file"));

  // native runs are not comparable across machines: refused, by name
  const std::string native = dir.path() + "/native/runs";
  train_into(shards, native, "d1", " --kernels native");
  r = test::run(script + " --expected " + expected + " " + native);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("not trained with the fixed kernel set: d1 (native)"));
  // no expected file, no runs: clear errors
  r = test::run(script + " --expected " + dir.path() + "/none.json " + first);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("none.json: no such file"));
  r = test::run(script + " --expected " + expected + " " + dir.path() + "/empty");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("run the study first"));
}
