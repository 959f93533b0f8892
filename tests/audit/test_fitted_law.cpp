// audit with a fitted law: rows outside the fit's data are marked as extrapolations (and by
// how far) in every format, loss predictions from a non-positive capacity term are refused
// unless asked, and the readers shared with fit-law (CSV, summary.json) behave as one.
#include "catch.h"

#include <cmath>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "records/run_summary.h"
#include "records/versioned_json.h"
#include "test_support.h"
#include "util/atomic_file.h"
#include "util/csv.h"
#include "util/error.h"

using namespace shapelaw;
using nlohmann::json;

namespace {

std::string audit() { return test::bin("audit"); }

// A paper-log record fitted on W in [16, 64], D in [1, 16], N (12·D·W²) in [3072, 786432].
json small_fit(double A) {
  return {{"format", "shapelaw.fit"},
          {"version", 1},
          {"options", {{"phi", "absolute"}, {"n_source", "auto"}, {"n_resolved", "12dw2"}}},
          {"input", {{"range", {{"N", {3072, 786432}}, {"T", {1179648, 1179648}}, {"D", {1, 16}}, {"W", {16, 64}}}}}},
          {"selected_model", "paper-log"},
          {"models",
           {{{"name", "paper-log"},
             {"param_names", {"A", "B_T", "gamma", "alpha", "mu", "kappa"}},
             {"params",
              {{"A", {{"estimate", A}}}, {"B_T", {{"estimate", 4.0}}}, {"gamma", {{"estimate", 0.2}}},
               {"alpha", {{"estimate", 0.3}}}, {"mu", {{"estimate", 0.5}}}, {"kappa", {{"estimate", 1.0}}}}},
             {"dcrit", {{"form", "log"}, {"kappa", 1.0}}}}}}};
}

}  // namespace

TEST_CASE("rows outside the fitted law's data are extrapolations, marked in every format") {
  test::TempDir dir;
  const std::string fit = dir.path() + "/fit.json", models = dir.path() + "/models.csv";
  test::write_text(fit, small_fit(8.0).dump());
  test::write_text(models, "name,depth,width,vocab\ninside,4,32,2048\nwide,12,2048,32000\n");
  auto j = test::run(audit() + " " + models + " --law " + fit + " --format json");
  INFO(j.output);
  REQUIRE(j.exit_code == 0);
  CHECK_THAT(j.output, Catch::Contains("audit: warning: 1 of 2 models lie outside the data the law was fitted on"));
  const json rep = json::parse(j.output.substr(j.output.find('{')));
  const json& rows = rep["tables"][0]["rows"];
  CHECK(rows[0]["extrapolation"].is_null());
  CHECK(rows[1]["extrapolation"]["W"].get<double>() == Approx(2048.0 / 64));
  CHECK(rows[1]["extrapolation"]["N"].get<double>() == Approx(12.0 * 12 * 2048 * 2048 / 786432));
  CHECK(!rows[1]["extrapolation"].contains("D"));  // 12 layers lie inside [1, 16]
  CHECK(rep["meta"]["law_range"]["W"] == json({16, 64}));
  REQUIRE(rep["warnings"].size() == 1);
  auto md = test::run(audit() + " " + models + " --law " + fit);
  CHECK_THAT(md.output, Catch::Contains("| inside |"));
  CHECK_THAT(md.output, Catch::Contains("extrapolated: N ×"));
  CHECK_THAT(md.output, Catch::Contains("W ×32.0"));
  CHECK_THAT(md.output, Catch::Contains("**Warning:** 1 of 2 models"));
  auto csv = test::run_stdout(audit() + " " + models + " --law " + fit + " --format csv");
  INFO(csv.errors);
  const CsvTable t = parse_csv(csv.output, "stdout");
  REQUIRE(t.column({"extrapolation_W"}) >= 0);
  CHECK(t.records[0].fields[t.column({"extrapolation_W"})].empty());
  CHECK(std::stod(t.records[1].fields[t.column({"extrapolation_W"})]) == Approx(32));
  // '-' is stdout, not a file named '-'
  auto dash = test::run_stdout("cd " + dir.path() + " && " + audit() + " " + models + " --law " + fit + " -o -");
  INFO(dash.errors);
  CHECK(dash.output.rfind("# audit models", 0) == 0);
  CHECK(!std::filesystem::exists(dir.path() + "/-"));
  // the paper's laws carry no range: nothing is marked
  auto paper = test::run(audit() + " " + models + " --format json");
  CHECK(!json::parse(paper.output)["tables"][0]["rows"][1].contains("extrapolation"));
}

TEST_CASE("a fitted law with a non-positive capacity term gives no loss difference unless asked") {
  test::TempDir dir;
  const std::string fit = dir.path() + "/fit.json", models = dir.path() + "/models.csv";
  test::write_text(fit, small_fit(-1.5).dump());
  test::write_text(models, "name,depth,width,vocab\ndeep,16,32,2048\n");
  auto r = test::run(audit() + " " + models + " --law " + fit + " --format json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("audit: warning: no ΔL: the fitted capacity term A/N^alpha has A = -1.5000 <= 0"));
  json rep = json::parse(r.output.substr(r.output.find('{')));
  const json& row = rep["tables"][0]["rows"][0];
  REQUIRE(row["redesign"].is_object());  // the redesign itself is still shown
  CHECK(row["delta_loss"].is_null());
  CHECK_THAT(row["delta_loss_refused"].get<std::string>(), Catch::Contains("A = -1.5000 <= 0"));
  CHECK(rep["meta"]["loss_refused"].is_string());
  auto csv = test::run_stdout(audit() + " " + models + " --law " + fit + " --format csv");
  INFO(csv.errors);
  CHECK_THAT(csv.output, Catch::Contains("delta_loss_refused"));
  auto md = test::run(audit() + " " + models + " --law " + fit);
  CHECK_THAT(md.output, Catch::Contains("**Warning:** no ΔL"));
  CHECK_THAT(md.output, Catch::Contains("refused (A ≤ 0)"));
  auto allowed = test::run(audit() + " " + models + " --law " + fit + " --allow-degenerate-law --format json");
  INFO(allowed.output);
  REQUIRE(allowed.exit_code == 0);
  json a = json::parse(allowed.output.substr(allowed.output.find('{')));
  CHECK(a["tables"][0]["rows"][0]["delta_loss"].is_number());
  CHECK_THAT(allowed.output, Catch::Contains("(--allow-degenerate-law)"));
  // a positive A: no refusal
  test::write_text(fit, small_fit(8.0).dump());
  auto fine = test::run(audit() + " " + models + " --law " + fit + " --format json");
  CHECK(json::parse(fine.output.substr(fine.output.find('{')))["tables"][0]["rows"][0]["delta_loss"].is_number());
}

TEST_CASE("a Box-Cox fit record (s, L1, alpha) gives the loss differences of its paper-coordinates twin") {
  test::TempDir dir;
  const std::string plain = dir.path() + "/plain.json", bc = dir.path() + "/bc.json", models = dir.path() + "/models.csv";
  test::write_text(plain, small_fit(8.0).dump());
  // A = 8, B_T = 4, alpha = 0.3 as fit-law writes it at constant T: s = A*alpha, L1 = A + B_T
  json box_cox = small_fit(8.0);
  json& m = box_cox["models"][0];
  m["param_names"] = {"s", "L1", "gamma", "alpha", "mu", "kappa"};
  m["params"].erase("A");
  m["params"].erase("B_T");
  m["params"]["s"] = {{"estimate", 8.0 * 0.3}};
  m["params"]["L1"] = {{"estimate", 8.0 + 4.0}};
  test::write_text(bc, box_cox.dump());
  test::write_text(models, "name,depth,width,vocab\ndeep,16,32,2048\n");
  auto delta = [&](const std::string& fit) {
    auto r = test::run(audit() + " " + models + " --law " + fit + " --format json");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return json::parse(r.output.substr(r.output.find('{')))["tables"][0]["rows"][0]["delta_loss"];
  };
  const json a = delta(plain), b = delta(bc);
  REQUIRE(a.is_number());
  REQUIRE(b.is_number());
  CHECK(b.get<double>() == Approx(a.get<double>()).epsilon(1e-12));
  // s <= 0: loss does not fall with N, refused as A <= 0 is
  m["params"]["s"]["estimate"] = -0.3;
  test::write_text(bc, box_cox.dump());
  auto r = test::run(audit() + " " + models + " --law " + bc + " --format json");
  CHECK_THAT(r.output, Catch::Contains("loss does not fall with N"));
}

TEST_CASE("audit --dcrit-only quotes the fitted law's D_crit with its extrapolation flags and nothing derived from it") {
  test::TempDir dir;
  const std::string fit = dir.path() + "/fit.json", models = dir.path() + "/models.csv";
  test::write_text(fit, small_fit(-1.5).dump());  // A <= 0: even the ΔL refusal is moot
  test::write_text(models, "name,depth,width,vocab\ninside,4,32,2048\nwide,12,2048,32000\n");
  auto j = test::run(audit() + " " + models + " --law " + fit + " --dcrit-only --format json");
  INFO(j.output);
  REQUIRE(j.exit_code == 0);
  const json rep = json::parse(j.output.substr(j.output.find('{')));
  CHECK(rep["meta"]["dcrit_only"] == true);
  const json& rows = rep["tables"][0]["rows"];
  REQUIRE(rows.size() == 2);
  // kappa = 1: D_crit = ln W
  CHECK(rows[1]["dcrit"].get<double>() == Approx(std::log(2048.0)));
  CHECK(rows[1]["extrapolation"]["W"].get<double>() == Approx(2048.0 / 64));
  for (const auto& row : rows)
    for (const char* derived : {"ratio", "verdict", "redesign", "delta_loss", "delta_loss_refused", "verdict_paper_log"})
      CHECK(!row.contains(derived));
  // the only warning is the extrapolation, said without verdict or redesign
  REQUIRE(rep["warnings"].size() == 1);
  CHECK(rep["warnings"][0] == "1 of 2 models lie outside the data the law was fitted on: their D_crit extrapolate the "
                              "fitted law (column \"outside the fit's data\" says by how far)");
  auto md = test::run_stdout(audit() + " " + models + " --law " + fit + " --dcrit-only");
  INFO(md.errors);
  CHECK_THAT(md.output, Catch::Contains("| model | kind | D | W | params counted | D_crit [95% CI] | outside the fit's data |"));
  CHECK_THAT(md.output, Catch::Contains("D_crit only (--dcrit-only)"));
  CHECK_THAT(md.output, !Catch::Contains("| verdict |") && !Catch::Contains("ΔL nats") && !Catch::Contains("redesign D'") &&
                           !Catch::Contains("Verdict on r") && !Catch::Contains("**Warning:** no ΔL"));
  auto csv = test::run_stdout(audit() + " " + models + " --law " + fit + " --dcrit-only --format csv");
  INFO(csv.errors);
  const CsvTable t = parse_csv(csv.output, "stdout");
  CHECK(t.column({"dcrit"}) >= 0);
  CHECK(t.column({"verdict"}) < 0);
  CHECK(t.column({"delta_loss"}) < 0);
}

TEST_CASE("fit-law's record carries its data range and the N it chose, and audit reads them") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  test::write_text(csv, "run,depth,width,loss,tokens\n"
                        "a,2,256,4.30,6.4e9\nb,4,256,4.10,6.4e9\nc,8,512,3.62,6.4e9\nd,16,512,3.44,6.4e9\n"
                        "e,8,1024,3.40,6.4e9\nf,16,1024,3.13,6.4e9\ng,8,1536,3.10,6.4e9\nh,16,1536,3.05,6.4e9\n");
  const std::string fit = dir.path() + "/fit.json";
  auto f = test::run(test::bin("fit-law") + " " + csv + " -m paper-log -B 5 --no-loo --no-profile -o " + fit);
  INFO(f.output);
  REQUIRE(f.exit_code == 0);
  const json rec = json::parse(read_file(fit));
  CHECK(rec["input"]["range"]["W"] == json({256, 1536}));
  CHECK(rec["input"]["range"]["D"] == json({2, 16}));
  CHECK(rec["options"]["n_resolved"] == "12dw2");
  auto a = test::run(audit() + " " + test::source("examples/flagship-models.csv") + " --law " + fit + " --format json");
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  const json rep = json::parse(a.output.substr(a.output.find('{')));
  CHECK(rep["meta"]["law_range"]["W"] == json({256, 1536}));
  for (const auto& row : rep["tables"][0]["rows"]) CHECK(row["extrapolation"].is_object());
}

TEST_CASE("one CSV reader: quoted newlines and commas parse alike in audit, split_csv_line and fit tables") {
  test::TempDir dir;
  const std::string models = dir.path() + "/models.csv";
  test::write_text(models, "# comment\nname,depth,width,vocab,family\n\"odd, \"\"one\"\"\nname\",4,512,32000,x\r\n");
  auto r = test::run(audit() + " " + models + " --format json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.output)["tables"][0]["rows"][0]["model"] == "odd, \"one\"\nname");
  CHECK(split_csv_line("a, \"b,c\" ,\"d\"\"e\"") == std::vector<std::string>{"a", "b,c", "d\"e"});
  CHECK(csv_row({"a,b", "c\"d", "e\nf", "g"}) == "\"a,b\",\"c\"\"d\",\"e\nf\",g\n");
  const CsvTable t = parse_csv(csv_row({"x", "y"}) + csv_row({"1,5", "two\nlines"}), "t");
  REQUIRE(t.records.size() == 1);
  CHECK(t.records[0].fields == std::vector<std::string>{"1,5", "two\nlines"});
  CHECK_THROWS_WITH(parse_csv("a,b\n1\n", "t.csv"), Catch::Contains("t.csv:2: expected 2 fields as in the header, got 1"));
  CHECK_THROWS_WITH(parse_csv("a\n\"open\n", "t.csv"), Catch::Contains("t.csv:2: unterminated quoted field"));
  CHECK_THROWS_WITH(parse_csv("# only a comment\n", "t.csv"), Catch::Contains("t.csv: empty CSV file"));
}

TEST_CASE("one versioned-record check and one summary.json reader") {
  test::TempDir dir;
  const std::string p = dir.path() + "/summary.json";
  test::write_text(p, R"({"format":"shapelaw.fit","version":1})");
  CHECK_THROWS_WITH(records::read_run_summary(p),
                    Catch::Contains("field 'format': expected \"shapelaw.summary\", got \"shapelaw.fit\""));
  test::write_text(p, R"({"format":"shapelaw.summary","version":3})");
  CHECK_THROWS_WITH(records::read_run_summary(p),
                    Catch::Contains("field 'version': 3 is newer than this tool understands (at most 1)"));
  test::write_text(p, "{oops");
  CHECK_THROWS_WITH(records::read_run_summary(p), Catch::Contains(p + ": not valid JSON"));
  test::write_text(p, R"({"depth": 2})");
  CHECK_THROWS_WITH(records::read_run_summary(p), Catch::Contains("field 'format': missing"));
  CHECK(records::read_run_summary(p, false).depth == 2);  // hand-written, no format: accepted where asked
  test::write_text(p, R"({"format":"shapelaw.summary","version":1,"depth":2.5})");
  CHECK_THROWS_WITH(records::read_run_summary(p), Catch::Contains("field 'depth': expected an integer"));
  // binding_config: as written, else config less the options that do not change the math
  test::write_text(p, R"({"format":"shapelaw.summary","version":1,"depth":2,"width":64,
    "config":{"lr":0.003,"seed":1,"out":"x","threads":4,"device":"cpu","model":{"depth":2}}})");
  records::RunSummary s = records::read_run_summary(p);
  CHECK(s.binding_config == json({{"lr", 0.003}, {"seed", 1}, {"model", {{"depth", 2}}}}));
  test::write_text(p, R"({"format":"shapelaw.summary","version":1,"config":{"lr":0.003},"binding_config":{"lr":0.01}})");
  CHECK(records::read_run_summary(p).binding_config == json({{"lr", 0.01}}));
  // audit and fit-law refuse the same file with the same words
  test::write_text(p, R"({"format":"shapelaw.summary","version":2,"depth":2,"width":64,"vocab_size":100,"final_val_loss":3})");
  auto a = test::run(audit() + " " + p);
  auto f = test::run(test::bin("fit-law") + " " + p);
  CHECK_THAT(a.output, Catch::Contains(p + ": field 'version': 2 is newer than this tool understands (at most 1)"));
  CHECK_THAT(f.output, Catch::Contains(p + ": field 'version': 2 is newer than this tool understands (at most 1)"));
}
