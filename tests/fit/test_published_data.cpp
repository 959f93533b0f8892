// The published data sets that fit-law is pointed at (examples/published/): each CSV is what
// its import script makes of the pinned source files, byte for byte, and a source file that no
// longer matches its pin stops the import before anything is written.
#include "catch.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.h"

using namespace shapelaw;

namespace {

const std::vector<std::string> kGemstonesCsvs = {"hot.csv", "cool_end.csv", "lr_ablation.csv"};

std::string import_gemstones() { return test::source("scripts/import-gemstones"); }

// Empty when the texts are equal, else the first line where they part (1-based) and both lines,
// so that a failure shows one line instead of 57 KB of CSV.
std::string first_difference(const std::string& expected, const std::string& actual) {
  if (expected == actual) return "";
  std::istringstream a(expected), b(actual);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) return "the texts differ only in their final newline";
    if (!more_a || !more_b || la != lb) {
      return "line " + std::to_string(line) + ": committed '" + (more_a ? la : "<end>") + "', generated '" +
             (more_b ? lb : "<end>") + "'";
    }
  }
}

std::vector<std::string> file_names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("published data: scripts/import-gemstones reproduces the committed CSVs from the pinned sources") {
  test::TempDir out;
  const std::string command = import_gemstones() + " --out " + out.path();
  const auto result = test::run(command);
  INFO("$ " << command << "\n" << result.output);
  REQUIRE(result.exit_code == 0);
  CHECK_THAT(result.output, Catch::Contains("hot.csv: 22 runs, 770 rows"));
  CHECK_THAT(result.output, Catch::Contains("cool_end.csv: 20 runs, 199 rows"));
  CHECK_THAT(result.output, Catch::Contains("lr_ablation.csv: 20 runs, 200 rows"));
  for (const auto& csv : kGemstonesCsvs) {
    INFO(csv);
    const std::string committed = test::read_text(test::source("examples/published/gemstones/" + csv));
    REQUIRE_FALSE(committed.empty());
    CHECK(first_difference(committed, test::read_text(out.path() + "/" + csv)) == "");
  }
  // the three CSVs and nothing else: no temporary file left behind
  CHECK(file_names(out.path()) == std::vector<std::string>{"cool_end.csv", "hot.csv", "lr_ablation.csv"});
}

TEST_CASE("published data: scripts/import-gemstones refuses a source file changed by one byte") {
  // a file the import reads, and one it only pins (their fitted parameters)
  const std::string changed = GENERATE(
      std::string("wandb_dfs/wandb_df_for_fitting_hot_100b+.jsonl"),
      std::string("parameters_delta-4/approach_3_width_depth_parameters_grid_search_0_cool_end.json"));
  INFO(changed);
  test::TempDir dir;
  const std::string source = dir.path() + "/source";
  std::filesystem::copy(test::source("examples/published/gemstones/source"), source,
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(dir.path() + "/out");
  {
    // one byte: the first digit 2 in the file becomes a 3
    std::string text = test::read_text(source + "/" + changed);
    const auto at = text.find('2');
    REQUIRE(at != std::string::npos);
    text[at] = '3';
    std::ofstream(source + "/" + changed, std::ios::binary | std::ios::trunc) << text;
  }
  const std::string command = import_gemstones() + " --source " + source + " --out " + dir.path() + "/out";
  const auto result = test::run(command);
  INFO("$ " << command << "\n" << result.output);
  CHECK(result.exit_code == 1);
  CHECK(test::count_lines_starting(result.output, "") == 1);  // one line
  CHECK_THAT(result.output, Catch::StartsWith("import-gemstones: error: " + source + "/" + changed + ": "));
  CHECK_THAT(result.output, Catch::Contains("SHA-256"));
  CHECK(file_names(dir.path() + "/out").empty());  // nothing written
}
