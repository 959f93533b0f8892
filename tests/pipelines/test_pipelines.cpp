// The make pipelines as a user runs them: the paper plan (make -n), the micro pipeline
// end to end at a tiny setting, and make's incremental semantics.
#include "catch.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_support.h"

using namespace shapelaw;
namespace fs = std::filesystem;
using test::run;

namespace {

// make in the source tree with the built tools first on PATH.
std::string make(const std::string& args) {
  return "cd " + test::source("") + " && PATH=" + test::bin("") + ":$PATH make --no-print-directory " + args;
}

int count_lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0;
  return n;
}

int count_lines_containing(const std::string& text, const std::string& part) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.find(part) != std::string::npos;
  return n;
}

int count_rows(const std::string& path) {  // CSV data rows
  std::ifstream in(path);
  std::string line;
  int n = -1;
  while (std::getline(in, line)) n += !line.empty();
  return n;
}

}  // namespace

TEST_CASE("make -n on the paper pipeline prints the 30-run plan and runs nothing") {
  test::TempDir dir;
  std::string paper = dir.path() + "/paper";
  auto r = run(make("-n -f pipelines/paper.mk PAPER=" + paper + " SLIMPAJAMA_DIR=" + dir.path() + "/slimpajama GPUS=8"));
  INFO(r.output.substr(0, 3000));
  REQUIRE(r.exit_code == 0);
  CHECK(count_lines_containing(r.output, "train --out " + paper + "/study/runs/") == 30);
  CHECK_THAT(r.output, Catch::Contains("--depth 64 --width 2896 --tokens 141600000000  --head-dim 16") ||
                           Catch::Contains("--depth 64 --width 2896 --tokens 141600000000 --head-dim 16"));
  CHECK_THAT(r.output, Catch::Contains("tokenize train-model") && Catch::Contains("--vocab-size 50257"));
  CHECK_THAT(r.output, Catch::Contains("fit-law") && Catch::Contains("audit ") && Catch::Contains("make-report"));
  CHECK_FALSE(fs::exists(paper));  // a dry run creates nothing
  // Each run's layout from the plan: the small runs on one GPU at the paper's micro-batch,
  // the 7B run over 8 GPUs with ZeRO-1, launched by torchrun.
  CHECK(count_lines_containing(r.output, "--probe-steps 1001 --micro-batch 16 --depth") >= 18);
  CHECK_THAT(r.output, Catch::Contains("torchrun --no-python --nproc-per-node=8 train --out " + paper +
                                       "/study/runs/t10-7B-64x2896 "));
  CHECK(count_lines_containing(r.output, "--zero 1") >= 2);
  // LAUNCH, given, wraps every run.
  r = run(make("-n -f pipelines/paper.mk PAPER=" + paper + " LAUNCH='torchrun --no-python --nproc-per-node=8'"));
  CHECK(count_lines_containing(r.output, "torchrun --no-python --nproc-per-node=8 train --out") == 30);
  // The plan itself: one line per run and the totals; what does not fit is said.
  r = run(make("-f pipelines/paper.mk plan PAPER=" + paper + " GPUS=8"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(count_lines_starting(r.output, "t9-") == 18);
  CHECK(count_lines_starting(r.output, "t10-") == 12);
  CHECK_THAT(r.output, Catch::Contains("total") && Catch::Contains("30/30") && Catch::Contains("GPU-hours"));
  r = run(make("-f pipelines/paper.mk plan PAPER=" + paper + " GPUS=1"));
  CHECK_THAT(r.output, Catch::Contains(" NO "));
}

TEST_CASE("the micro pipeline runs end to end at a tiny setting and reruns only what changed") {
  test::TempDir dir;
  const std::string data = dir.path() + "/data";
  // A synthetic corpus in the place of the fetched Brown corpus keeps the test off the
  // network (scripts/fetch-corpus is what a bare `make` runs; import-brown is tested in
  // tests/corpus).
  const std::string corpus = data + "/corpus/brown";
  fs::create_directories(corpus + "/train/chunk1");
  fs::create_directories(corpus + "/validation/chunk1");
  test::write_synthetic_corpus(corpus + "/train/chunk1/example_train_0.jsonl", 300, 11);
  test::write_synthetic_corpus(corpus + "/validation/chunk1/example_holdout_0.jsonl", 20, 12);
  test::write_text(corpus + "/.complete", "");
  const std::string vars = "-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=4096 VOCAB=400 FIT_ARGS='-B 20 --no-loo'";
  auto r = run(make(vars));
  INFO(r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0));
  REQUIRE(r.exit_code == 0);

  const std::string study = data + "/micro/study-fast";
  const std::string grid = test::source("pipelines/grids/micro-fast.grid");
  int grid_runs = 0;
  {
    std::ifstream in(grid);
    std::string line;
    while (std::getline(in, line)) grid_runs += !line.empty() && line[0] != '#';
  }
  // Every artifact exists and parses; the results table has one row per grid run.
  CHECK(count_rows(study + "/report/results.csv") == grid_runs);
  for (const char* file : {"/results/fit.json"}) {
    auto fit = nlohmann::json::parse(test::read_text(study + file));
    CHECK(fit.at("format") == "shapelaw.fit");
    CHECK(fit.at("models").size() >= 1);
  }
  CHECK(count_rows(study + "/results/tau.csv") == grid_runs);
  for (const auto& entry : fs::directory_iterator(study + "/runs")) {
    auto summary = nlohmann::json::parse(test::read_text(entry.path().string() + "/summary.json"));
    CHECK(summary.at("tokens").get<int64_t>() >= 4096);
    CHECK(fs::exists(entry.path().string() + "/grad_fit.json"));
  }
  std::string readme = test::read_text(study + "/report/README.md");
  CHECK_THAT(readme, Catch::Contains("## Results") && Catch::Contains("## Fitted laws") &&
                         Catch::Contains("## Audit of flagship models") && Catch::Contains("depth penalty"));
  int pngs = 0;
  for (const auto& entry : fs::directory_iterator(study + "/report"))
    if (entry.path().extension() == ".png") {
      CHECK(fs::file_size(entry.path()) > 1000);
      ++pngs;
    }
  CHECK(pngs >= 5);
  // audit reads the fit record (this grid fits no law with a critical depth, and audit says so).
  auto a = run(test::bin("audit") + " " + test::source("examples/flagship-models.csv") + " --law " +
               study + "/results/fit.json --model kaplan");
  CHECK_THAT(a.output, Catch::Contains("no critical depth"));
  CHECK(fs::file_size(study + "/results/audit-paper-constants.md") > 100);

  // Nothing to do when nothing changed.
  r = run(make("-n " + vars));
  CHECK(count_lines_starting(r.output, "train ") == 0);
  CHECK(count_lines_starting(r.output, "fit-law") == 0);
  // Touching one summary reruns its probe and the fit onward, never training.
  fs::last_write_time(study + "/runs/w32-d3/summary.json", fs::file_time_type::clock::now());
  r = run(make("-n " + vars));
  CHECK(count_lines_starting(r.output, "train ") == 0);
  CHECK(count_lines_starting(r.output, "fit-law ") == 1);
  CHECK(count_lines_starting(r.output, "probe-grads measure " + study + "/runs/w32-d3") == 1);
  CHECK(count_lines_starting(r.output, "probe-grads measure") == 1);
  CHECK_THAT(r.output, Catch::Contains("scripts/make-report"));
  REQUIRE(run(make(vars)).exit_code == 0);
  // Other fit options rerun the fit onward only.
  r = run(make("-n -f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=4096 VOCAB=400 FIT_ARGS='-B 10 --no-loo'"));
  CHECK(count_lines_starting(r.output, "train ") == 0);
  CHECK(count_lines_starting(r.output, "probe-grads measure") == 0);
  CHECK(count_lines_starting(r.output, "fit-law -B 10") == 1);
  // Other training options retrain every run whose command changed, from scratch.
  r = run(make("-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=6144 VOCAB=400 FIT_ARGS='-B 20 --no-loo' -n"));
  CHECK(count_lines_starting(r.output, "train ") == grid_runs);
  r = run(make("-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=6144 VOCAB=400 FIT_ARGS='-B 20 --no-loo' runs"));
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("retraining it from scratch"));
  CHECK(count_lines_starting(r.output, "train ") == grid_runs);

  // SEEDS: every grid row once per seed, grouped; fit-law and the report see the replicates.
  const std::string seeded = data + "/seeded";
  r = run(make(vars + " SEEDS='1 2' STUDY=" + seeded));
  INFO(r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0));
  REQUIRE(r.exit_code == 0);
  auto s2 = nlohmann::json::parse(test::read_text(seeded + "/runs/w32-d3-s2/summary.json"));
  CHECK(s2.at("group") == "w32-d3");
  CHECK(s2.at("config").at("seed") == 2);
  auto fit = nlohmann::json::parse(test::read_text(seeded + "/results/fit.json"));
  CHECK(fit.at("replicates").at("configurations") == grid_runs);
  CHECK(fit.at("replicates").at("rows") == 2 * grid_runs);
  CHECK(fit.at("models").at(0).contains("lack_of_fit"));
  CHECK(count_rows(seeded + "/report/results.csv") == 2 * grid_runs);
  CHECK_THAT(test::read_text(seeded + "/report/README.md"),
             Catch::Contains("Replicates: " + std::to_string(2 * grid_runs) + " runs in " + std::to_string(grid_runs) +
                             " configurations"));
}
