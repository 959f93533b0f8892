#include "catch.h"

#include <fstream>
#include <set>

#include "audit/paper_data.h"
#include "audit/table_check.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
using namespace shapelaw::audit;

namespace {
// (depth, width) of flagged rows
std::set<std::pair<int64_t, int64_t>> flagged(const Report& rep) {
  std::set<std::pair<int64_t, int64_t>> out;
  for (const auto& row : rep.tables.at(0).rows)
    if (row["flagged"].get<bool>()) out.insert({row["depth"].get<int64_t>(), row["width"].get<int64_t>()});
  return out;
}
const std::set<std::pair<int64_t, int64_t>> kExpectedFlags = {
    {12, 4096}, {24, 2896}, {48, 2048}, {64, 1776}, {80, 1584},  // Table 10 1B: ~2.4B non-embedding, stated ~1B
    {16, 4096}, {24, 3328}, {40, 2560}, {56, 2176}, {72, 1920},  // Table 10 3B: 10–20% above the stated count
    {64, 2896}};                                                 // 7B-deep: 6.73B, stated 7.08B
bool has_width_conflict(const Report& rep, const std::string& scale, int64_t depth, std::set<int64_t> widths) {
  for (const auto& row : rep.tables.at(1).rows) {
    if (row["kind"] != "width" || row["scale"] != scale || row["depth"] != depth) continue;
    std::set<int64_t> got;
    for (const auto& v : row["values"]) got.insert(v["width"].get<int64_t>());
    return got == widths;
  }
  return false;
}
}  // namespace

TEST_CASE("check-table on the shipped paper transcription flags Table 10's 1B/3B rows and the 7B-deep row") {
  CheckOptions o;
  Report rep = check_tables({test::source("examples/paper-tables")}, o);
  CHECK(flagged(rep) == kExpectedFlags);
  // Table 9, Table 2, §4.8 and the 7B-optimal rows agree with 12·D·W² + 2·V·W within 2%
  int ok = 0;
  for (const auto& row : rep.tables[0].rows) ok += !row["flagged"].get<bool>();
  CHECK(ok == 18 + 3 + 2 + 2);
  CHECK(has_width_conflict(rep, "7B", 64, {2816, 2896}));
  CHECK(has_width_conflict(rep, "1B", 24, {1792, 2896}));
  CHECK(has_width_conflict(rep, "3B", 40, {2432, 2560}));
  // the non-parameter file in the directory is skipped with a note, not an error
  bool skipped = false;
  for (const auto& n : rep.tables[0].notes) skipped = skipped || n.find("table4-table8.csv: skipped") != std::string::npos;
  CHECK(skipped);
  CHECK(rep.errors.empty());
}

TEST_CASE("check-table on examples/paper/ (the data stage's transcription) finds the same rows") {
  std::string dir = test::source("examples/paper");
  Report rep = check_tables({dir}, CheckOptions{});
  CHECK(flagged(rep) == kExpectedFlags);
  // 2816 appears nowhere in examples/paper/: the conflict comes from the paper's text (§4.8, Table 3)
  CHECK(has_width_conflict(rep, "7B", 64, {2816, 2896}));
  CheckOptions no_claims;
  no_claims.paper_claims = false;
  CHECK_FALSE(has_width_conflict(check_tables({dir}, no_claims), "7B", 64, {2816, 2896}));
}

TEST_CASE("the built-in transcription agrees with the shipped CSVs") {
  CheckOptions o;
  Report shipped = check_tables({test::source("examples/paper-tables")}, o);
  std::multiset<std::tuple<int64_t, int64_t, long long>> a, b;
  for (const auto& row : shipped.tables[0].rows)
    a.insert({row["depth"].get<int64_t>(), row["width"].get<int64_t>(), std::llround(row["params_stated"].get<double>() / 1e5)});
  for (const auto& c : paper_configs())
    if (c.params > 0 && c.width > 0 && c.source != "§4.5 text" && c.source != "§4.6 text")
      b.insert({c.depth, c.width, std::llround(c.params / 1e5)});
  CHECK(a == b);
}

TEST_CASE("check-table input errors name the file line and field - --keep-going keeps the rest") {
  test::TempDir dir;
  std::string path = dir.path() + "/t.csv";
  std::ofstream(path) << "run,depth,width,params_b\na,12,4096,1.04\nb,x,4096,1.0\nc,24,2048,1.2\n";
  CheckOptions o;
  REQUIRE_THROWS_WITH(check_tables({path}, o), Catch::Contains(path + ":3: field 'depth': 'x' is not an integer"));
  o.keep_going = true;
  Report rep = check_tables({path}, o);
  CHECK(rep.tables[0].rows.size() == 2);
  REQUIRE(rep.errors.size() == 1);
  std::string nop = dir.path() + "/nop.csv";
  std::ofstream(nop) << "run,depth,width\na,12,4096\n";
  REQUIRE_THROWS_WITH(check_tables({nop}, CheckOptions{}), Catch::Contains("missing column: parameter count"));
}

TEST_CASE("scale labels are read from run names") {
  CHECK(scale_from_label("t10-7B-64x2896") == "7B");
  CHECK(scale_from_label("1.3B model") == "1.3B");
  CHECK(scale_from_label("t9-2x256") == "");
  CHECK(scale_from_label("GPT3B") == "");
}

TEST_CASE("check-table reads the models-CSV columns: only the flagship rows with a documented count_note are flagged") {
  CheckOptions o;
  o.paper_claims = false;
  Report rep = check_tables({test::source("examples/flagship-models.csv")}, o);
  std::set<std::string> names;
  for (const auto& row : rep.tables[0].rows)
    if (row["flagged"].get<bool>()) names.insert(row["row"].get<std::string>());
  CHECK(names == std::set<std::string>{"Gopher 280B", "Chinchilla 70B"});
  CHECK(rep.tables[1].rows.empty());
}
