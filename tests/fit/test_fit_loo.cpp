// Leave-one-out that scales (issue 28): above --loo-max-groups groups a seeded sample is
// left out, each group refit exactly, and the output says so; a long run shows progress.
// Before, every one of 100k rows was refit (39 min, no output).
#include "catch.h"

#include <cstdio>
#include <fstream>
#include <random>
#include <set>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fit/analysis.h"
#include "fit/loo.h"
#include "fit/parallel.h"
#include "test_support.h"
#include "util/atomic_file.h"

using namespace shapelaw;
using json = nlohmann::json;

namespace {

// rows of L = 1.7 + 400/N^0.3 with 1% noise, over a few shapes
std::string kaplan_table(int rows) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.01);
  const int depths[] = {2, 4, 8, 16}, widths[] = {128, 256, 512, 1024, 2048};
  std::string csv = "run,depth,width,loss,tokens\n";
  for (int i = 0; i < rows; ++i) {
    const int D = depths[i % 4], W = widths[(i / 4) % 5];
    const double N = 12.0 * D * W * W, L = (1.7 + 400 / std::pow(N, 0.3)) * (1 + noise(rng));
    char line[128];
    std::snprintf(line, sizeof line, "r%d,%d,%d,%.6f,%d\n", i, D, W, L, 1000000000 + i);  // no two rows alike
    csv += line;
  }
  return csv;
}

}  // namespace

TEST_CASE("leave-one-out samples groups above --loo-max-groups: seeded, distinct, the same for any thread count") {
  CHECK(fit::LawOptions{}.loo_max_groups == 200);
  const auto a = fit::sample_groups(100000, 200, 42), b = fit::sample_groups(100000, 200, 42);
  CHECK(a == b);
  CHECK(a.size() == 200);
  CHECK(std::set<size_t>(a.begin(), a.end()).size() == 200);
  CHECK(std::is_sorted(a.begin(), a.end()));
  CHECK(a.back() < 100000);
  CHECK(a.back() > 90000);  // spread over the whole range, not the first 200
  CHECK(fit::sample_groups(100000, 200, 43) != a);
  CHECK(fit::sample_groups(5, 200, 42) == std::vector<size_t>{0, 1, 2, 3, 4});
}

TEST_CASE("fit-law: a large table's leave-one-out refits a stated sample, and a small one every row") {
  test::TempDir tmp;
  const std::string csv = tmp.path() + "/big.csv", out = tmp.path() + "/fit.json";
  write_file_atomic(csv, kaplan_table(3000));
  const std::string common = test::bin("fit-law") + " " + csv + " -m kaplan-E -B 0 --optimal-draws 0 --no-profile";
  auto r = test::run(common + " --loo-max-groups 25 -j 2 -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("leave-one-out on a seeded random 25 of 3000 groups (25 rows), each refit exactly") !=
        std::string::npos);
  json metrics = json::parse(read_file(out))["models"][0]["metrics"];
  CHECK(metrics["loo_groups"] == 3000);
  CHECK(metrics["loo_groups_left_out"] == 25);
  CHECK(metrics["loo_failed"] == 0);
  REQUIRE(metrics["loo_rmse"].is_number());
  CHECK(metrics["loo_rmse"].get<double>() == Approx(metrics["rmse"].get<double>()).epsilon(0.5));
  // the same sample whatever the thread count
  auto one = test::run(common + " --loo-max-groups 25 -j 1 -o " + tmp.path() + "/one.json");
  INFO(one.output);
  REQUIRE(one.exit_code == 0);
  CHECK(json::parse(read_file(tmp.path() + "/one.json"))["models"][0]["metrics"]["loo_rmse"] == metrics["loo_rmse"]);

  write_file_atomic(csv, kaplan_table(40));
  auto small = test::run(common + " -o " + out);
  INFO(small.output);
  REQUIRE(small.exit_code == 0);
  json m = json::parse(read_file(out))["models"][0]["metrics"];
  CHECK_FALSE(m.contains("loo_groups"));  // every row left out once: exact LOO as before
  CHECK(small.output.find("seeded random") == std::string::npos);
}

TEST_CASE("a long parallel loop says where it is on stderr, a short one stays silent") {
  test::TempDir tmp;
  const std::string log = tmp.path() + "/stderr.txt";
  std::fflush(stderr);
  const int saved = ::dup(2), fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ::dup2(fd, 2);
  fit::parallel_for_progress(4, 2, "leave-one-out kaplan-E", [](size_t) {}, /*interval=*/0.0);
  fit::parallel_for_progress(4, 2, "quiet", [](size_t) {}, /*interval=*/3600.0);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(fd);
  ::close(saved);
  const std::string text = read_file(log);
  CHECK(text.find("fit-law: leave-one-out kaplan-E: 4/4 refits, 100%, ETA 0 s\n") != std::string::npos);
  CHECK(text.find("quiet") == std::string::npos);
}
