// The make pipelines as a user runs them: the paper plan (make -n), the micro pipeline
// end to end at a tiny setting, and make's incremental semantics.
#include "catch.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <vector>

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

// A synthetic corpus in the place of the fetched Brown corpus keeps the tests off the
// network (scripts/fetch-corpus is what a bare `make` runs; import-brown is tested in
// tests/corpus).
void write_corpus(const std::string& data, int seed) {
  const std::string corpus = data + "/corpus/brown";
  fs::create_directories(corpus + "/train/chunk1");
  fs::create_directories(corpus + "/validation/chunk1");
  test::write_synthetic_corpus(corpus + "/train/chunk1/example_train_0.jsonl", 300, seed);
  test::write_synthetic_corpus(corpus + "/validation/chunk1/example_holdout_0.jsonl", 20, seed + 1);
  test::write_text(corpus + "/.complete", "");
}

}  // namespace

TEST_CASE("make -n on the paper pipeline prints the 30-run plan and runs nothing") {
  test::TempDir dir;
  std::string paper = dir.path() + "/paper";
  auto r = run(make("-n -f pipelines/paper.mk PAPER=" + paper + " SLIMPAJAMA_DIR=" + dir.path() + "/slimpajama GPUS=8"));
  INFO(r.output.substr(0, 3000));
  REQUIRE(r.exit_code == 0);
  // GPT-2's tokenizer by default (the paper's), fetched rather than trained
  CHECK(count_lines_containing(r.output, "train --out " + paper + "/study-gpt2/runs/") == 30);
  CHECK_THAT(r.output, Catch::Contains("scripts/fetch-tokenizer gpt2 " + paper + "/tokenizer-gpt2"));
  CHECK_THAT(r.output, Catch::Contains("--data " + paper + "/shards-gpt2/ --tokenizer-model " + paper + "/tokenizer-gpt2"));
  CHECK(r.output.find("tokenize train-model") == std::string::npos);
  CHECK_THAT(r.output, Catch::Contains("--depth 64 --width 2896 --tokens 141600000000  --head-dim 16") ||
                           Catch::Contains("--depth 64 --width 2896 --tokens 141600000000 --head-dim 16"));
  CHECK_THAT(r.output, Catch::Contains("fit-law") && Catch::Contains("audit ") && Catch::Contains("make-report"));
  CHECK_FALSE(fs::exists(paper));  // a dry run creates nothing
  // Each run's layout from the plan: the small runs on one GPU at the paper's micro-batch,
  // the 7B runs over 4 GPUs with ZeRO-2, launched by torchrun (a probe step costs what
  // another step does: the per-layer norms come from the ranks' gradient slices).
  CHECK(count_lines_containing(r.output, "--probe-steps 1001 --micro-batch 16 ") >= 18);
  CHECK_THAT(r.output, Catch::Contains("torchrun --standalone --no_python --nproc_per_node=4 train --out " + paper +
                                       "/study-gpt2/runs/t10-7B-64x2896 "));
  CHECK(count_lines_containing(r.output, "--zero 2") >= 2);
  // TOKENIZER=sentencepiece: today's sentencepiece BPE trained on SlimPajama, its own directories
  r = run(make("-n -f pipelines/paper.mk TOKENIZER=sentencepiece PAPER=" + paper + " SLIMPAJAMA_DIR=" + dir.path() +
               "/slimpajama GPUS=8"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(count_lines_containing(r.output, "train --out " + paper + "/study/runs/") == 30);
  CHECK(count_lines_containing(r.output, "--vocab-multiple 64") == 30);  // 50304 rows, whole GPU tiles
  CHECK_THAT(r.output, Catch::Contains("tokenize train-model") && Catch::Contains("--vocab-size 50257"));
  r = run(make("-n -f pipelines/paper.mk VOCAB=32000 PAPER=" + paper));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("GPT-2's tokenizer has 50257 tokens"));
  // LAUNCH, given, wraps every run.
  r = run(make("-n -f pipelines/paper.mk PAPER=" + paper + " LAUNCH='torchrun --standalone --no_python --nproc_per_node=8'"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(count_lines_containing(r.output, "torchrun --standalone --no_python --nproc_per_node=8 train --out") == 30);
  // The plan itself: one line per run and the totals; what does not fit is said.
  r = run(make("-f pipelines/paper.mk plan PAPER=" + paper + " GPUS=8"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "t9-") == 18);
  CHECK(test::count_lines_starting(r.output, "t10-") == 12);
  CHECK_THAT(r.output, Catch::Contains("total") && Catch::Contains("30/30") && Catch::Contains("GPU-hours"));
  CHECK_THAT(r.output, Catch::Contains("probes") && Catch::Contains("margin") && Catch::Contains("a probe step is planned as any other"));
  r = run(make("-f pipelines/paper.mk plan PAPER=" + paper + " GPUS=1"));
  CHECK_THAT(r.output, Catch::Contains(" NO "));
  // From a shell whose PATH lacks the tools (BUILD names the tree, as README's commands
  // run): the grid's expansion, a <(...) inside the plan's command, must find train too.
  const std::string build = fs::path(test::bin("")).parent_path().parent_path().string();
  r = run("cd " + test::source("") + " && PATH=/usr/bin:/bin make --no-print-directory -f pipelines/paper.mk plan BUILD=" +
          build + " PAPER=" + paper + " GPUS=8");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("30/30"));
}

TEST_CASE("make -n on the paper's controls shows every arm's runs, laid out, and the plan counts a sweep's runs") {
  test::TempDir dir;
  const std::string paper = dir.path() + "/paper";
  auto r = run(make("-n -f pipelines/controls.mk PAPER=1 PAPER_DIR=" + paper + " SLIMPAJAMA_DIR=" + dir.path() +
                    "/slimpajama GPUS=8"));
  INFO(r.output.substr(r.output.size() > 3000 ? r.output.size() - 3000 : 0));
  REQUIRE(r.exit_code == 0);
  // 30 configurations x 3 learning rates, per parameterization; arm 1 is SP's 3e-4 slice
  CHECK(count_lines_containing(r.output, "train --out " + paper + "/controls-gpt2/sp/runs/") == 90);
  CHECK(count_lines_containing(r.output, "train --out " + paper + "/controls-gpt2/completep/runs/") == 90);
  CHECK(count_lines_containing(r.output, "--param completep --depth-alpha 1 --eps-scope blocks --base-width 256 --base-depth 2 --depth") == 90);
  CHECK_THAT(r.output, Catch::Contains("torchrun --standalone --no_python --nproc_per_node=4 train --out " + paper +
                                       "/controls-gpt2/sp/runs/t10-7B-64x2896-lr3e-4 "));
  CHECK(r.output.find(" 1/study") == std::string::npos);  // PAPER=1 is the switch, not paper.mk's directory
  // the plan of a swept grid: every run its own GPU-hours
  r = run(make("-f pipelines/paper.mk plan PAPER=" + paper + " GPUS=8 LRS='1e-4 3e-4'"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "t9-2x256-lr") == 2);
  CHECK_THAT(r.output, Catch::Contains("60/60"));
}

TEST_CASE("the micro pipeline runs end to end at a tiny setting and reruns only what changed") {
  test::TempDir dir;
  const std::string data = dir.path() + "/data";
  write_corpus(data, 11);
  const std::string vars = "-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=4096 VOCAB=400 FIT_ARGS='-B 20 --no-loo'";
  auto r = run(make(vars));
  INFO(r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0));
  REQUIRE(r.exit_code == 0);

  const std::string study = data + "/micro/study-fast";
  // The closing block: the verdict, the per-width table, where the report is.
  CHECK_THAT(r.output, Catch::Contains("depth penalty") && Catch::Contains("best loss") &&
                           Catch::Contains("report: " + study + "/report/README.md"));
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
  CHECK(fs::exists(study + "/report/ucurves.pdf"));
  {  // params.csv: one row per fitted parameter of every law
    auto fit = nlohmann::json::parse(test::read_text(study + "/results/fit.json"));
    size_t params = 0;
    for (const auto& m : fit.at("models")) params += m.at("param_names").size();
    CHECK(params >= 2);
    if (fs::exists(study + "/results/tau-fit.json"))
      for (const auto& m : nlohmann::json::parse(test::read_text(study + "/results/tau-fit.json")).at("models"))
        params += m.at("param_names").size();
    CHECK(count_rows(study + "/report/params.csv") == int(params));
  }
  // the kernel set: in every run's stamp and record, and in the report
  CHECK_THAT(test::read_text(study + "/runs/w32-d3/train.args"), Catch::Contains("--kernels fixed"));
  CHECK_THAT(readme, Catch::Contains("- kernels: fixed (avx2 kernels") || Catch::Contains("- kernels: fixed (portable"));
  // Three runs leave AICc undefined: the report says so instead of naming a law.
  CHECK_THAT(readme, Catch::Contains("no law is selected"));
  CHECK_THAT(readme, !Catch::Contains("\n# "));  // included documents are nested, not top level
  // audit reads the fit record (this grid fits no law with a critical depth, and audit says so).
  auto a = run(test::bin("audit") + " " + test::source("examples/flagship-models.csv") + " --law " +
               study + "/results/fit.json --model kaplan");
  CHECK_THAT(a.output, Catch::Contains("no critical depth"));
  CHECK(fs::file_size(study + "/results/audit-paper-constants.md") > 100);

  // Nothing to do when nothing changed.
  r = run(make("-n " + vars));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "train ") == 0);
  CHECK(test::count_lines_starting(r.output, "fit-law") == 0);
  // Touching one summary reruns its probe and the fit onward, never training.
  fs::last_write_time(study + "/runs/w32-d3/summary.json", fs::file_time_type::clock::now());
  r = run(make("-n " + vars));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "train ") == 0);
  CHECK(test::count_lines_starting(r.output, "fit-law ") == 1);
  CHECK(test::count_lines_starting(r.output, "probe-grads measure " + study + "/runs/w32-d3") == 1);
  CHECK(test::count_lines_starting(r.output, "probe-grads measure") == 1);
  CHECK_THAT(r.output, Catch::Contains("scripts/make-report"));
  REQUIRE_OK(make(vars));
  // A deleted output in the middle of the chain comes back (no target is treated as an
  // intermediate file that may stay missing), and only what follows from it reruns.
  fs::remove(study + "/results/fit.json");
  r = run(make("-n " + vars));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "train ") == 0);
  CHECK(test::count_lines_starting(r.output, "fit-law ") == 1);
  CHECK(test::count_lines_starting(r.output, "probe-grads measure") == 0);
  REQUIRE_OK(make(vars));
  CHECK(fs::exists(study + "/results/fit.json"));
  // Other fit options rerun the fit onward only.
  r = run(make("-n -f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=4096 VOCAB=400 FIT_ARGS='-B 10 --no-loo'"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "train ") == 0);
  CHECK(test::count_lines_starting(r.output, "probe-grads measure") == 0);
  CHECK(test::count_lines_starting(r.output, "fit-law -B 10") == 1);
  // Other training options retrain every run whose command changed, from scratch.
  r = run(make("-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=6144 VOCAB=400 FIT_ARGS='-B 20 --no-loo' -n"));
  CHECK(test::count_lines_starting(r.output, "train ") == grid_runs);
  r = run(make("-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=6144 VOCAB=400 FIT_ARGS='-B 20 --no-loo' runs"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("retraining it from scratch"));
  // the terminal: a line per run as it starts and as it ends, with its result and the ETA
  CHECK(test::count_lines_starting(r.output, "[") == 2 * grid_runs);
  CHECK_THAT(r.output, Catch::Contains("[1/" + std::to_string(grid_runs) + "] w64-d3") &&
                           Catch::Contains("val ") && Catch::Contains("study ETA") &&
                           Catch::Contains("last run done"));
  CHECK(test::count_lines_starting(r.output, "train ") == 0);  // commands go to the logs (V=1 echoes them)
  CHECK(test::read_text(study + "/runs/w16-d3/train.log").find("$ train --out " + study + "/runs/w16-d3") !=
        std::string::npos);

  // SEEDS: every grid row once per seed, grouped; fit-law and the report see the replicates.
  // Two depths at W16, so that the report has an excess to check (the fast grid has one
  // depth per width); as many rows as the fast grid.
  const std::string seeded = data + "/seeded", seeded_grid = data + "/seeded.grid";
  test::write_text(seeded_grid, "w16-d1 1 16\nw16-d3 3 16\nw32-d3 3 32\n");
  r = run(make(vars + " SEEDS='1 2' STUDY=" + seeded + " GRID=" + seeded_grid));
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
  // study.json (fit-law study): the pooled seed SD over every configuration, and per width the
  // excess of the deepest over the best depth, from the means over seeds of the summaries
  const auto study_json = nlohmann::json::parse(test::read_text(seeded + "/report/study.json"));
  CHECK(study_json.at("seed_spread").at("df") == grid_runs);
  std::map<int, std::map<int, double>> mean;  // width -> depth -> mean over the two seeds
  for (const auto& entry : fs::directory_iterator(seeded + "/runs")) {
    auto s = nlohmann::json::parse(test::read_text(entry.path().string() + "/summary.json"));
    mean[s.at("width").get<int>()][s.at("depth").get<int>()] += s.at("final_val_loss").get<double>() / 2;
  }
  // one row per width with two depths or more (W16 here): the loop below runs
  size_t widths_with_depths = 0;
  for (const auto& [w, by_depth] : mean) widths_with_depths += by_depth.size() >= 2;
  CHECK(widths_with_depths == 1);
  CHECK(study_json.at("arm").at("excess").size() == widths_with_depths);
  for (const auto& e : study_json.at("arm").at("excess")) {
    INFO("width " << e.at("width"));
    const auto& m = mean.at(e.at("width").get<int>());
    double best = 1e300;
    for (const auto& [d, l] : m) best = std::min(best, l);
    CHECK(e.at("excess").get<double>() == Approx(m.rbegin()->second - best).epsilon(1e-12));
    CHECK(e.at("se").is_number());
  }
  CHECK_THAT(test::read_text(seeded + "/report/README.md"),
             Catch::Contains("**Is there a depth penalty at this budget?**"));
}

namespace {

// A grid file in DIR, and make -n on the micro pipeline with it (prints the plan only).
test::CommandResult plan(const test::TempDir& dir, const std::string& grid_text, const std::string& vars = "") {
  const std::string grid = dir.path() + "/test.grid";
  test::write_text(grid, grid_text);
  // one seed unless the test says otherwise (the default study's three would triple every name)
  const std::string seeds = vars.find("SEEDS=") == std::string::npos ? " SEEDS=" : "";
  return run(make("-n -f pipelines/micro.mk DATA=" + dir.path() + "/data GRID=" + grid + seeds + " " + vars));
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

}  // namespace

TEST_CASE("a grid is checked before anything runs, naming the file and line") {
  test::TempDir dir;
  const std::string grid = dir.path() + "/test.grid";
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {"a 1 16\nb 2 32\nc 4 --lr 1e-3\n", "test.grid:3: error: run c: depth and width come before"},
      {"a 1 16\nb 2 32\na 4 32\n", "test.grid:3: error: run name a repeats the run of line 1"},
      {"a 1 16\n# comment\nb 2 24\n", "test.grid:3: error: run b: head dimension 16 does not divide width 24"},
      {"a 1 16\nb 0 32\n", "test.grid:2: error: depth \"0\" of run b is not an integer >= 1"},
      {"a 1 16\nb 2 32 --no-such-flag 3\n", "test.grid:2: error: run b: train has no option --no-such-flag"},
      {"a 1 16\nb 2 32 --out elsewhere\n", "test.grid:2: error: run b: --out is set by the pipeline"},
      {"a 1 16\nb 2 16\n", "test.grid: error: the width does not vary"},
  };
  for (const auto& c : cases) {
    auto r = plan(dir, c.text);
    INFO(c.text << r.output);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.output, Catch::Contains(dir.path() + "/" + c.message));
    CHECK_THAT(r.output, Catch::Contains("nothing was run"));
    CHECK(test::count_lines_starting(r.output, "train ") == 0);
  }
  // One width runs with LENIENT=1, warned; a depth that never varies is a warning up front.
  auto r = plan(dir, "a 1 16\nb 2 16\n", "LENIENT=1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains(grid + ": warning: the width does not vary"));
  r = plan(dir, "a 2 16\nb 2 32\n");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("warning: depth does not vary at any width: the U-curve question cannot be asked"));
  CHECK(test::count_lines_starting(r.output, "train --out") == 2);
}

TEST_CASE("sweeps expand a grid row into one run per value, composing with seeds") {
  test::TempDir dir;
  const std::string runs = dir.path() + "/data/micro/study-1seed/runs/";
  // LRS: every row once per learning rate, named R-lr<value>, the last --lr winning.
  auto r = plan(dir, "a 1 16\nb 2 32\n", "LRS='1e-3 1e-2'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto trains = lines_starting(r.output, "train --out");
  REQUIRE(trains.size() == 4);
  for (const std::string run : {"a-lr1e-3", "a-lr1e-2", "b-lr1e-3", "b-lr1e-2"}) {
    auto line = lines_starting(r.output, "train --out " + runs + run + " ");
    REQUIRE(line.size() == 1);
    const std::string lr = run.substr(run.size() - 4);
    CHECK(line[0].rfind("--lr " + lr + " --data") != std::string::npos);
    CHECK_THAT(line[0], Catch::Contains("--run-id " + run + " ") && !Catch::Contains("--run-group"));
  }
  CHECK(lines_starting(r.output, "fit-law ").at(0).find("--best-of lr") != std::string::npos);

  // With SEEDS: the replicates of one learning rate form a group.
  r = plan(dir, "a 1 16\nb 2 32\n", "LRS='1e-3 1e-2' SEEDS='7 8'");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(lines_starting(r.output, "train --out").size() == 8);
  auto line = lines_starting(r.output, "train --out " + dir.path() + "/data/micro/study-seeds/runs/b-lr1e-2-s8 ");
  REQUIRE(line.size() == 1);
  CHECK_THAT(line[0], Catch::Contains("--lr 1e-2 --seed 8 --run-group b-lr1e-2 --data"));

  // A row's own comma list sweeps that row only; lists of flags that are not sweepable
  // (--probe-steps takes a list) stay one value; two lists multiply.
  r = plan(dir, "a 1 16 --lr 1e-3,3e-3 --probe-steps 1,2\nb 2 32\nc 2 16 --lr 1e-3,3e-3 --weight-decay 0,0.1\n");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  trains = lines_starting(r.output, "train --out");
  CHECK(trains.size() == 2 + 1 + 4);
  line = lines_starting(r.output, "train --out " + runs + "a-lr3e-3 ");
  REQUIRE(line.size() == 1);
  CHECK_THAT(line[0], Catch::Contains("--probe-steps 1,2 --lr 3e-3 --data"));
  CHECK(lines_starting(r.output, "train --out " + runs + "b ").size() == 1);
  CHECK(lines_starting(r.output, "train --out " + runs + "c-lr3e-3-weight-decay0.1 ").size() == 1);
  auto fit = lines_starting(r.output, "fit-law ").at(0);
  CHECK_THAT(fit, Catch::Contains("--best-of lr") && !Catch::Contains("--best-of weight_decay"));
  CHECK_THAT(r.output, Catch::Contains("several flags swept (lr weight_decay)"));
  // weight decay alone: its summary.json key
  r = plan(dir, "a 1 16\nb 2 32\n", "SWEEP=weight-decay=0,0.1");
  REQUIRE(lines_starting(r.output, "train --out " + runs + "a-weight-decay0.1 ").size() == 1);
  CHECK_THAT(lines_starting(r.output, "fit-law ").at(0), Catch::Contains("--best-of weight_decay"));
  // Without a sweep, no --best-of.
  r = plan(dir, "a 1 16\nb 2 32\n");
  CHECK_THAT(lines_starting(r.output, "fit-law ").at(0), !Catch::Contains("--best-of"));
}

TEST_CASE("outputs follow DATA and STUDY, and the pipelines find the tools themselves") {
  test::TempDir dir;
  auto report_dir = [&](const std::string& vars) {
    // -B: every rule's command, whatever a study already made in the source tree holds
    auto r = run("cd " + test::source("") + " && make --no-print-directory -n -B -f pipelines/micro.mk " + vars);
    INFO(r.output.substr(0, 2000));
    auto line = lines_starting(r.output, "scripts/make-report");
    REQUIRE(line.size() == 1);
    const std::string out = line[0].substr(line[0].find("--out ") + 6);
    return out.substr(0, out.find(' '));  // (a --controls after it where make controls ran here)
  };
  CHECK(report_dir("") == "report");
  CHECK(report_dir("SEEDS='1 2'") == "report-seeds");
  CHECK(report_dir("SEEDS=") == "report-1seed");
  CHECK(report_dir("DATA=" + dir.path()) == dir.path() + "/micro/study/report");
  CHECK(report_dir("STUDY=" + dir.path() + "/s") == dir.path() + "/s/report");
  CHECK(report_dir("STUDY=" + dir.path() + "/s REPORT_DIR=" + dir.path() + "/r") == dir.path() + "/r");
  // the default (fused) reaches every run; BLOCK_IMPL=aten adds no flag (the stamps of studies
  // made before fused was the default stay as they were)
  for (const std::string impl : {"", "aten"}) {
    auto r = run("cd " + test::source("") + " && make --no-print-directory -n -f pipelines/micro.mk DATA=" + dir.path() +
                 (impl.empty() ? "" : " BLOCK_IMPL=" + impl));
    const auto trains = lines_starting(r.output, "train --out");
    REQUIRE(trains.size() == 30);  // the default grid's 15 rows, two seeds each
    CHECK(count_lines_containing(r.output, "--block-impl fused") == (impl.empty() ? 30 : 0));
    CHECK(count_lines_containing(r.output, "--block-impl") == (impl.empty() ? 30 : 0));
  }
  // Without the tools: one message naming them and what to do, before anything runs.
  auto r = run("cd " + test::source("") + " && PATH=/usr/bin:/bin make --no-print-directory -f pipelines/micro.mk BUILD=" +
               dir.path() + "/no-build DATA=" + dir.path());
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("tokenize shard: not found in " + dir.path() + "/no-build/bin") &&
                           Catch::Contains("make build"));
  // controls.mk by hand finds the build tree the same way (its report runs fit-law itself)
  r = run("cd " + test::source("") + " && PATH=/usr/bin:/bin make --no-print-directory -f pipelines/controls.mk BUILD=" +
          dir.path() + "/no-build DATA=" + dir.path());
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("fit-law: not found in " + dir.path() + "/no-build/bin"));
}

TEST_CASE("a run's losses do not depend on how many runs make runs at once") {
  test::TempDir dir;
  const std::string data = dir.path() + "/data";
  write_corpus(data, 21);
  const std::string vars = "-f pipelines/micro.mk FAST=1 DATA=" + data + " TOKENS=8192 VOCAB=400 runs";
  for (const char* jobs : {"1", "2"}) {
    auto r = run(make("-j" + std::string(jobs) + " " + vars + " STUDY=" + dir.path() + "/j" + jobs));
    INFO(r.output.substr(r.output.size() > 3000 ? r.output.size() - 3000 : 0));
    REQUIRE(r.exit_code == 0);
  }
  auto losses = [](const std::string& metrics) {
    std::vector<std::string> out;
    std::istringstream in(test::read_text(metrics));
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      out.push_back(j.at("kind").get<std::string>() + " " + std::to_string(j.at("step").get<int>()) + " " +
                    j.value("loss", nlohmann::json()).dump() + " " + j.value("val_loss", nlohmann::json()).dump() +
                    " " + j.value("grad_norm", nlohmann::json()).dump());
    }
    return out;
  };
  int compared = 0;
  for (const auto& entry : fs::directory_iterator(dir.path() + "/j1/runs")) {
    const std::string run = entry.path().filename().string();
    auto a = losses(entry.path().string() + "/metrics.jsonl");
    auto b = losses(dir.path() + "/j2/runs/" + run + "/metrics.jsonl");
    INFO(run);
    CHECK(a.size() >= 4);
    CHECK(a == b);  // bit for bit: the JSON numbers are printed at full precision
    ++compared;
  }
  CHECK(compared == 3);
}

TEST_CASE("make controls: three arms, per-row lr lists, best-of-lr selection, a report, and nothing rerun") {
  test::TempDir dir;
  const std::string data = dir.path() + "/data", grid = dir.path() + "/controls.grid";
  write_corpus(data, 11);
  // w16-d1 carries its own lists; the other rows get the default lists
  test::write_text(grid, "# tiny\nw16-d1 1 16 sp=1e-3,3e-3,1e-2 completep=3e-3,1e-2,3e-2\nw16-d2 2 16\nw16-d4 4 16\n"
                         "w32-d1 1 32\nw32-d2 2 32\nw32-d4 4 32\n");
  const std::string vars = "-f pipelines/controls.mk DATA=" + data + " CONTROLS_GRID=" + grid + " CONTROLS_REPORT=" +
                           dir.path() + "/report TOKENS=4096 VOCAB=400 SP_DEFAULT_LRS='1e-3 3e-3' " +
                           "CP_DEFAULT_LRS='1e-2 3e-2' FIT_ARGS='-B 10 --no-loo --no-profile'";
  auto r = run(make("-j2 " + vars));
  INFO(r.output.substr(r.output.size() > 4000 ? r.output.size() - 4000 : 0));
  REQUIRE(r.exit_code == 0);
  const std::string report = dir.path() + "/report", controls = data + "/micro/controls";
  // SP's 3e-3 runs are arm 1's (TOKENS= is overridden, so in controls/sp-fixed, not the default study)
  CHECK(test::count_lines_starting(test::read_text(controls + "/sp-fixed.grid"), "w16-d2 2 16") == 1);
  CHECK(test::count_lines_starting(test::read_text(controls + "/sp/grid"), "w16-d1 1 16 --lr 1e-3,1e-2") == 1);
  CHECK(test::count_lines_starting(test::read_text(controls + "/sp/grid"), "w16-d2-lr1e-3 2 16 --lr 1e-3") == 1);
  CHECK(test::count_lines_starting(test::read_text(controls + "/completep/grid"), "w32-d4 4 32 --lr 1e-2,3e-2") == 1);
  CHECK(fs::exists(controls + "/sp-fixed/runs/w16-d4/summary.json"));
  CHECK(!fs::exists(data + "/micro/study/runs"));
  CHECK(!fs::exists(controls + "/sp/runs/w16-d4-lr3e-3"));
  // every run once per arm and lr: SP 6 fixed + 1 + 1 + 5, CompleteP 3 + 5 x 2
  CHECK(test::count_lines_starting(test::read_text(report + "/runs.tsv"), "sp\t") == 13);
  CHECK(test::count_lines_starting(test::read_text(report + "/runs.tsv"), "completep\t") == 13);
  nlohmann::json s = nlohmann::json::parse(test::read_text(controls + "/completep/runs/w32-d4-lr3e-2/summary.json"));
  CHECK(s["param"] == "completep");
  CHECK(s["config"]["lr"] == 3e-2);
  CHECK(s["config"]["min_lr_ratio"] == 0.1);
  // the fixed-lr arm is the 3e-3 slice of SP; the tuned arms pick one lr per row
  std::istringstream sel(test::read_text(report + "/selected.tsv"));
  std::string line;
  int fixed = 0, tuned = 0, cp = 0;
  while (std::getline(sel, line)) {
    if (line.rfind("sp-fixed\t", 0) == 0) {
      fixed++;
      CHECK(line.find("\t0.003\t") != std::string::npos);
    }
    tuned += line.rfind("sp-tuned\t", 0) == 0;
    cp += line.rfind("completep\t", 0) == 0;
  }
  CHECK(fixed == 6);
  CHECK(tuned == 6);
  CHECK(cp == 6);
  CHECK(test::count_lines_starting(test::read_text(report + "/excess.tsv"), "sp-tuned\t") == 2);  // per width
  // w16-d1's SP values: its own list of three
  CHECK(test::count_lines_starting(test::read_text(report + "/runs.tsv"), "sp\tw16-d1\t") == 3);
  const std::string readme = test::read_text(report + "/README.md");
  CHECK_THAT(readme, Catch::Contains("## Verdict") && Catch::Contains("**SP, lr 3e-3**") &&
                         Catch::Contains("**CompleteP, best base lr**") && Catch::Contains("tokens per parameter") &&
                         Catch::Contains("sp-fixed"));
  for (const char* png : {"ucurves.png", "best-lr.png", "lr-transfer.png", "ucurves.pdf"})
    CHECK(fs::exists(report + "/" + png));
  CHECK(fs::exists(report + "/fits/completep.json"));
  // finished runs are never retrained
  r = run(make("-n " + vars));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("train --out") == std::string::npos);
  // with nothing overridden, arm 1 is the default study itself (make -n changes nothing)
  r = run(make("-n -f pipelines/controls.mk DATA=" + data + " CONTROLS_GRID=" + grid));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("train --out " + data + "/micro/study/runs/w16-d4-s42 ") != std::string::npos);  // its seeds
  CHECK(r.output.find("sp-fixed/runs") == std::string::npos);
  // a grid row without runs is refused by the report, not passed over; a grid that
  // includes another (controls-equal-n.grid's way) has that grid's rows too
  const std::string more = dir.path() + "/more.grid";
  test::write_text(more, "# more\ninclude controls.grid\nw16-d8 8 16\n");
  r = run("cd " + test::source("") + " && scripts/controls-grid arm sp " + more + " --default-lrs '1e-3 3e-3' 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(test::count_lines_starting(r.output, "w16-d1 1 16 --lr 1e-3,3e-3,1e-2") == 1);
  CHECK(test::count_lines_starting(r.output, "w16-d8 8 16 --lr 1e-3,3e-3") == 1);
  test::write_text(dir.path() + "/missing.grid", "w16-d1 1 16\ninclude nothere.grid\n");
  r = run("cd " + test::source("") + " && scripts/controls-grid arm sp " + dir.path() + "/missing.grid 2>&1");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(dir.path() + "/missing.grid:2: include nothere.grid: no such grid file"));
  r = run("cd " + test::source("") + " && PATH=" + test::bin("") + ":$PATH scripts/make-controls-report --controls " +
          controls + " --grid " + more + " --out " + dir.path() + "/report-more 2>&1");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains(more + ":3: row w16-d8 has no sp runs"));
  CHECK_FALSE(fs::exists(dir.path() + "/report-more"));
  // a typo in an arm list names the grid's file and line before anything runs
  test::write_text(grid, "w16-d1 1 16 sp=1e-3,x\nw32-d1 1 32\n");
  r = run(make(vars));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains(grid + ":1:") && Catch::Contains("sp=1e-3,x"));
}

// make -n on chinchilla.mk with DATA (and more variables): its plan, which must succeed
test::CommandResult chinchilla_plan(const std::string& data, const std::string& vars = "") {
  auto r = run(make("-n -f pipelines/chinchilla.mk " + vars + " DATA=" + data));
  INFO(r.output.substr(0, 3000));
  REQUIRE(r.exit_code == 0);
  return r;
}

TEST_CASE("make -n chinchilla: both arms at a budget per configuration, each row's lr, its own directories") {
  test::TempDir dir;
  const std::string data = dir.path() + "/data";
  auto r = chinchilla_plan(data);
  const std::string arms = data + "/micro/chinchilla";
  // the grid's 13 rows (W64 D8, D16 dropped for the 90 minutes), once per arm
  CHECK(count_lines_containing(r.output, "train --out " + arms + "/sp/runs/") == 13);
  CHECK(count_lines_containing(r.output, "train --out " + arms + "/completep/runs/") == 13);
  CHECK(count_lines_containing(r.output, "--tokens-per-param 20 --tokens-per-param-count total ") == 26);
  CHECK(count_lines_containing(r.output, " --tokens 1179648") == 0);  // no fixed length
  CHECK(count_lines_containing(r.output, "--param completep --depth-alpha 1 --eps-scope blocks --base-width 16 "
                                         "--base-depth 1 --depth") == 13);
  // each row's best lr of the controls (pipelines/grids/chinchilla.grid)
  CHECK_THAT(r.output, Catch::Contains("train --out " + arms + "/sp/runs/w16-d1-lr3e-2 ") &&
                           Catch::Contains("--depth 1 --width 16 --lr 3e-2 ") &&
                           Catch::Contains("train --out " + arms + "/completep/runs/w64-d4-lr3e-2 "));
  CHECK(r.output.find("w64-d16") == std::string::npos);
  // τ probes, the fit and each arm's report, then the page
  CHECK(count_lines_containing(r.output, "probe-grads measure " + arms + "/sp/runs/") == 7);  // D >= 3: 4, 8, 16 at W16, W32; 4 at W64
  CHECK_THAT(r.output, Catch::Contains("--out report-chinchilla/sp") && Catch::Contains("--out report-chinchilla/completep") &&
                           Catch::Contains("scripts/make-chinchilla-report --chinchilla " + arms));
  CHECK_FALSE(fs::exists(data + "/micro/chinchilla/sp/runs"));  // a dry run trains nothing
  // another budget or count: another stamp (the train command) and its own directories
  r = chinchilla_plan(data, "TOKENS_PER_PARAM=10 TOKENS_PER_PARAM_COUNT=non-embedding");
  CHECK(count_lines_containing(r.output, "train --out " + data + "/micro/chinchilla-10non-embedding/sp/runs/") == 13);
  CHECK(count_lines_containing(r.output, "--tokens-per-param 10 --tokens-per-param-count non-embedding ") == 26);
  CHECK_THAT(r.output, Catch::Contains("--out report-chinchilla-10non-embedding/sp"));
}

TEST_CASE("make -n chinchilla: public-domain prose by default, its own tokenizer, and CORPUS=brown its own report") {
  test::TempDir dir;
  const std::string data = dir.path() + "/data";
  auto r = chinchilla_plan(data);
  CHECK_THAT(r.output, Catch::Contains("scripts/fetch-corpus --corpus pd-prose " + data + "/corpus/pd-prose"));
  // the tokenizer learns from the corpus it will encode
  CHECK_THAT(r.output, Catch::Contains("tokenize train-model " + data + "/corpus/pd-prose/train --vocab-size 2048"));
  CHECK_THAT(r.output, Catch::Contains("--count total --corpus pd-prose") &&
                           Catch::Contains("STUDY_TITLE=\"shapelaw chinchilla (sp): pd-prose, 20 tokens"));
  CHECK(r.output.find("corpus/brown") == std::string::npos);
  // Brown, the default study's corpus: its own report beside the shipped one
  r = chinchilla_plan(data, "CORPUS=brown");
  CHECK(count_lines_containing(r.output, "train --out " + data + "/micro/chinchilla/sp/runs/") == 13);
  CHECK_THAT(r.output, Catch::Contains("--out report-chinchilla-brown/sp") && Catch::Contains("--corpus Brown"));
  CHECK(r.output.find("pd-prose") == std::string::npos);
  CHECK(r.output.find("report-chinchilla/") == std::string::npos);
}

TEST_CASE("make-chinchilla-report: the budget table per arm from the runs' summaries (tokens/param, epochs)") {
  test::TempDir dir;
  const std::string runs = dir.path() + "/chinchilla", report = dir.path() + "/report",
                    manifest = dir.path() + "/manifest.json";
  test::write_text(manifest, R"({"splits": {"train": {"tokens": 1000}}})");
  auto summary = [&](const std::string& arm, const std::string& id, int depth, int width, int total, int tokens) {
    fs::create_directories(runs + "/" + arm + "/runs/" + id);
    nlohmann::json j = {{"run_id", id}, {"depth", depth}, {"width", width},
                        {"params", {{"total", total}, {"non_embedding", total / 2}, {"paper_12DW2", total / 4}}},
                        {"tokens", tokens}, {"config", {{"lr", 0.01}}}, {"final_val_loss", 5.123456}};
    test::write_text(runs + "/" + arm + "/runs/" + id + "/summary.json", j.dump());
  };
  const std::string cmd = "cd " + test::source("") + " && scripts/make-chinchilla-report --chinchilla " + runs +
                          " --report " + report + " --manifest " + manifest + " --tokens-per-param 20 --count ";
  summary("sp", "w16-d1", 1, 16, 100, 2000);
  auto r = run(cmd + "total 2>&1");
  CHECK(r.exit_code != 0);  // the CompleteP arm has no runs: nothing is written
  CHECK_THAT(r.output, Catch::Contains("no " + runs + "/completep/runs/*/summary.json"));
  CHECK_FALSE(fs::exists(report + "/README.md"));
  summary("sp", "w16-d2", 2, 16, 150, 3000);
  summary("completep", "w16-d1", 1, 16, 100, 2000);
  r = run(cmd + "total 2>&1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string readme = test::read_text(report + "/README.md");
  CHECK_THAT(readme, Catch::Contains("## SP, best lr") && Catch::Contains("## CompleteP, best base lr"));
  CHECK_THAT(readme, Catch::Contains("| w16-d1 | 1 | 16 | 100 | 2000 | 20 | 2 | 0.01 | 5.1235 |"));
  CHECK_THAT(readme, Catch::Contains("| w16-d2 | 2 | 16 | 150 | 3000 | 20 | 3 | 0.01 | 5.1235 |"));
  // the count chooses the N column and so tokens/param
  r = run(cmd + "non-embedding 2>&1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(test::read_text(report + "/README.md"), Catch::Contains("| w16-d1 | 1 | 16 | 50 | 2000 | 40 | 2 |"));
}

TEST_CASE("every script's usage is its whole header comment, its first line to its last") {
  // {script and arguments that ask for the usage, whether it keeps the "# " of each line}
  const std::vector<std::pair<std::string, bool>> asks = {
      {"check-reproduced", false}, {"gpu-slot --help", false}, {"study-grid", false},
      {"controls-grid bogus", false}, {"debian13-check --help", true}, {"gpu-check.sh --help", true}};
  for (const auto& [ask, keeps_hash] : asks) {
    const std::string script = ask.substr(0, ask.find(' '));
    std::ifstream in(test::source("scripts/" + script));
    std::string line, first, last;
    std::getline(in, line);  // the #! line
    while (std::getline(in, line) && !line.empty() && line[0] == '#') {
      std::string shown = keeps_hash ? line : line.substr(line.rfind("# ", 0) == 0 ? 2 : 1);
      if (first.empty()) first = shown;
      last = shown;
    }
    auto r = run("cd " + test::source("") + " && scripts/" + ask + " 2>&1");
    INFO(ask << "\n" << r.output);
    REQUIRE(!first.empty());
    CHECK_THAT(r.output, Catch::StartsWith(first) && Catch::Contains(last + "\n"));
    CHECK(r.output.find("set -euo") == std::string::npos);
  }
}

TEST_CASE("every tool: a usage error is one line `tool: error: ... (see --help)` and exit status 2") {
  // not CLI11's own two lines and exit 104-109, which a tool that bypasses util/command_line.h prints
  const std::vector<std::pair<std::string, std::string>> asks = {
      {"tokenize --bogus", "tokenize"},           {"tokenize encode x.jsonl", "tokenize"},
      {"shard write", "shard"},                   {"shard cat --format nonsense", "shard"},
      {"train --steps abc", "train"},             {"train --bogus", "train"},
      {"train eval", "train eval"},               {"probe-grads measure", "probe-grads"},
      {"fit-law --bogus", "fit-law"},             {"fit-law study --bogus x", "fit-law study"},
      {"fit-law controls --bogus x", "fit-law controls"}, {"audit --bogus", "audit"},
      // '-' for an output that is a directory: refused, not made into a directory named "-"
      {"shard write -o -", "shard"},              {"tokenize import-brown /tmp -o -", "tokenize"},
      {"train --data x --out -", "train"},        {"train --steps 1", "train"},
      // a bound says its number (not CLI11's range text, "0.000000 to 17976931348623157081..." in 309 digits)
      {"fit-law -B -1 x.csv", "fit-law"},         {"probe-grads fit --bogus", "probe-grads"}};
  for (const auto& [ask, name] : asks) {
    const std::string tool = ask.substr(0, ask.find(' '));
    auto r = run(test::bin(tool) + ask.substr(tool.size()) + " 2>&1 </dev/null");
    INFO(ask << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::StartsWith(name + ": error: ") && Catch::EndsWith(" (see --help)\n"));
    CHECK(std::count(r.output.begin(), r.output.end(), '\n') == 1);
    CHECK(r.output.find("179769313486") == std::string::npos);
  }
  CHECK_THAT(run(test::bin("fit-law") + " -B -1 x.csv 2>&1").output, Catch::Contains("--bootstrap: must be >= 0 (got -1)"));
  // the usage line: "Usage: train eval [OPTIONS] run" in CLI11 2.3 (Debian 12), no "Usage: " in 2.6 (sid)
  CHECK_THAT(run(test::bin("train") + " eval --help").output, Catch::Contains("train eval [OPTIONS] run"));
  for (const std::string tool : {"tokenize", "shard", "train", "probe-grads", "fit-law", "audit"}) {
    auto help = run(test::bin(tool) + " --help 2>&1");
    INFO(tool << "\n" << help.output);
    INFO(help.output);
    CHECK(help.exit_code == 0);
    CHECK_THAT(help.output, Catch::Contains("--help"));
  }
}
