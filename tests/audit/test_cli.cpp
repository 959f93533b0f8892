#include "catch.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "util/atomic_file.h"
#include "util/csv.h"

using namespace shapelaw;
using test::bin;
using test::run;
using test::run_stdout;
using test::source;

namespace {
std::string audit() { return bin("audit"); }
}  // namespace

TEST_CASE("audit of the flagship table: markdown by default thresholds and law stated") {
  auto r = run(audit() + " " + source("examples/flagship-models.csv"));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("| GPT-3 175B | dense | 96 | 12288 |") != std::string::npos);
  CHECK(r.output.find("22.9 [") != std::string::npos);  // Table 4's D_crit with its interval
  CHECK(r.output.find("far over-deep (4.20×)") != std::string::npos);
  CHECK(r.output.find("Verdict on r = D/D_crit: r ≤ 1 within D_crit; 1 < r ≤ 1.25") != std::string::npos);
  CHECK(r.output.find("D_crit = 2.43·ln W") != std::string::npos);
}

TEST_CASE("audit --format json: typed rows with CIs verdicts and redesigns") {
  auto r = run_stdout(audit() + " " + source("examples/flagship-models.csv") + " --format json");
  INFO(r.errors);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["format"] == "shapelaw.audit");
  const auto& rows = j["tables"][0]["rows"];
  REQUIRE(rows.size() >= 15);
  bool saw_gpt3 = false;
  for (const auto& row : rows) {
    CHECK(row["dcrit_ci95"][0].get<double>() < row["dcrit"].get<double>());
    CHECK(row["dcrit_ci95"][1].get<double>() > row["dcrit"].get<double>());
    if (row["model"] == "GPT-3 175B") {
      saw_gpt3 = true;
      CHECK(row["dcrit"].get<double>() == Approx(22.88).margin(0.01));
      CHECK(row["redesign"]["depth"] == 23);
      CHECK(row["redesign"]["width"].get<int>() % 128 == 0);
      CHECK(row["delta_loss"].get<double>() < 0);  // Φ vanishes at D = D_crit
      CHECK(row["delta_loss_ci95"].is_array());
    }
  }
  CHECK(saw_gpt3);
}

TEST_CASE("audit reads config.json files and directories - csv output - atomic -o") {
  test::TempDir dir;
  std::string out = dir.path() + "/audit.csv";
  auto r = run(audit() + " " + source("examples/hf-configs/llama-3-70b.json") + " " + source("examples/hf-configs/mpt-7b") +
               " --format csv -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.empty());
  // plain numbers in columns of their own, read back as the JSON rows say
  const CsvTable t = read_csv(out);
  auto json_out = run(audit() + " " + source("examples/hf-configs/llama-3-70b.json") + " " +
                      source("examples/hf-configs/mpt-7b") + " --format json");
  INFO(json_out.output);
  REQUIRE(json_out.exit_code == 0);
  const nlohmann::json rows = nlohmann::json::parse(json_out.output)["tables"][0]["rows"];
  REQUIRE(t.records.size() == 2);
  REQUIRE(rows.size() == 2);
  const char* numeric[] = {"depth", "width", "params_counted", "dcrit", "dcrit_lo", "dcrit_hi", "ratio", "ratio_lo",
                           "ratio_hi", "dcrit_paper_log", "dcrit_paper_tau"};
  for (size_t i = 0; i < 2; ++i) {
    const auto& f = t.records[i].fields;
    CHECK(f[t.column({"model"})] == rows[i]["model"].get<std::string>());
    for (const char* col : numeric) {
      INFO(col);
      REQUIRE(t.column({col}) >= 0);
      const std::string cell = f[t.column({col})];
      size_t used = 0;
      const double v = std::stod(cell, &used);
      CHECK(used == cell.size());  // the whole cell is the number: no "[…]", no suffix
      const std::string key = std::string(col);
      const double want = key.size() > 3 && key.substr(key.size() - 3) == "_lo"   ? rows[i][key.substr(0, key.size() - 3) + "_ci95"][0].get<double>()
                          : key.size() > 3 && key.substr(key.size() - 3) == "_hi" ? rows[i][key.substr(0, key.size() - 3) + "_ci95"][1].get<double>()
                                                                                 : rows[i][key].get<double>();
      CHECK(v == want);
    }
  }
  CHECK(t.records[0].fields[t.column({"model"})] == "llama-3-70b");
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    CHECK(e.path().filename() == "audit.csv");  // no temporary left behind
}

TEST_CASE("switching the law: paper-tau paper-table10 a fit record with --model") {
  auto tau = run(audit() + " " + source("examples/hf-configs/llama-3-70b.json") + " --law paper-tau --format json");
  INFO(tau.output);
  REQUIRE(tau.exit_code == 0);
  auto j = nlohmann::json::parse(tau.output);
  CHECK(j["tables"][0]["rows"][0]["dcrit"].get<double>() == Approx(2.06 * std::pow(8192.0, 0.44)));
  CHECK(j["tables"][0]["rows"][0]["verdict"] == "within D_crit");  // 80 < 108.6: the forms disagree

  test::TempDir dir;
  nlohmann::json fit = {{"format", "shapelaw.fit"}, {"version", 1}, {"options", {{"phi", "relative"}}},
                        {"selected_model", "chinchilla"}};
  nlohmann::json m = {{"name", "paper-power"},
                      {"param_names", {"c", "a", "gamma", "mu"}},
                      {"params", {{"c", {{"estimate", 1.0}}}, {"a", {{"estimate", 0.44}}}, {"gamma", {{"estimate", 0.2}}},
                                  {"mu", {{"estimate", 0.3}}}}},
                      {"bootstrap_draws", {{0.9, 0.44, 0.2, 0.3}, {1.1, 0.44, 0.2, 0.3}, {1.0, 0.44, 0.2, 0.3}}},
                      {"dcrit", {{"form", "power"}, {"c", 1.0}, {"a", 0.44}}}};
  fit["models"] = {m, {{"name", "chinchilla"}}};
  std::ofstream(dir.path() + "/fit.json") << fit.dump();
  auto sel = run(audit() + " " + source("examples/hf-configs/llama-3-70b.json") + " --law " + dir.path() + "/fit.json");
  CHECK(sel.exit_code == 1);
  CHECK(sel.output.find("models[chinchilla].dcrit") != std::string::npos);
  auto ok = run(audit() + " " + source("examples/hf-configs/llama-3-70b.json") + " --law " + dir.path() +
                "/fit.json --model paper-power --format json");
  INFO(ok.output);
  REQUIRE(ok.exit_code == 0);
  auto row = nlohmann::json::parse(ok.output)["tables"][0]["rows"][0];
  CHECK(row["dcrit"].get<double>() == Approx(std::pow(8192.0, 0.44)));
  CHECK(row["dcrit_ci95"][0].get<double>() < row["dcrit"].get<double>());
}

TEST_CASE("bad input: one clear message naming file and field non-zero exit - --keep-going prints the rest") {
  test::TempDir dir;
  std::string csv = dir.path() + "/models.csv";
  std::ofstream(csv) << "name,depth,width,heads,vocab,params\nfine,24,2048,16,50257,1.3B\nodd,24,2000,48,50257,1.3B\n";
  auto r = run(audit() + " " + csv);
  CHECK(r.exit_code == 1);
  CHECK(r.output == "audit: error: " + csv + ":3: field 'width': 2000 is not divisible by heads 48 (give head_dim if intended)\n");
  auto k = run(audit() + " " + csv + " --keep-going");
  CHECK(k.exit_code == 1);
  CHECK(k.output.find("| fine | dense | 24 | 2048 |") != std::string::npos);
  CHECK(k.output.find("audit: error: " + csv + ":3: field 'width'") != std::string::npos);

  auto none = run(audit());
  CHECK(none.exit_code == 1);
  CHECK(none.output.find("no input") != std::string::npos);
  auto missing = run(audit() + " " + dir.path() + "/absent.csv");
  CHECK(missing.exit_code == 1);
  CHECK(missing.output.find("absent.csv: no such file") != std::string::npos);
  auto fmt = run(audit() + " " + csv + " --format xml");
  CHECK(fmt.exit_code == 1);
  CHECK(fmt.output.find("--format 'xml'") != std::string::npos);
  auto usage = run(audit() + " --no-such-option");
  CHECK(usage.exit_code == 2);
}

TEST_CASE("check-table and paper subcommands") {
  auto c = run(audit() + " check-table " + source("examples/paper-tables") + " --format json");
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  auto j = nlohmann::json::parse(c.output);
  CHECK(j["kind"] == "check-table");
  auto f = run(audit() + " check-table " + source("examples/paper-tables") + " --fail-on-flag > /dev/null");
  CHECK(f.exit_code == 3);
  auto ok = run(audit() + " check-table " + source("examples/paper-tables/table9.csv") + " --fail-on-flag > /dev/null");
  INFO(ok.output);
  CHECK(ok.exit_code == 0);

  auto p = run(audit() + " paper");
  INFO(p.output);
  REQUIRE(p.exit_code == 0);
  CHECK(p.output.find("| Table 4 | GPT-3 (175B) | 12288 | 96 | 22.9 | 22.88 |") != std::string::npos);
  CHECK(p.output.find("| width | 7B 64L | 2816 (Table 3, §4.8 text 6.38B); 2896 (") != std::string::npos);
  CHECK(p.output.find("| paper §5.1 wide GPT-3 | 24 | 28000 | 225.79B | 1.298× |") != std::string::npos);
  auto l = run(audit() + " laws --width 3000 --format csv");
  INFO(l.output);
  REQUIRE(l.exit_code == 0);
  CHECK(l.output.find("\n3000,") != std::string::npos);
}

TEST_CASE("end to end: a fit-law record of the paper's 30 runs drives the audit with its bootstrap intervals") {
  test::TempDir dir;
  std::string fit = dir.path() + "/fit.json";
  auto f = run(bin("fit-law") + " " + source("examples/paper/paper30.csv") + " -m paper-log -B 10 -j 1 --no-loo -o " + fit +
               " > /dev/null");
  INFO(f.output);
  REQUIRE(f.exit_code == 0);
  auto record = nlohmann::json::parse(read_file(fit));
  double kappa = record["models"][0]["dcrit"]["kappa"].get<double>();
  auto a = run_stdout(audit() + " " + source("examples/flagship-models.csv") + " --law " + fit + " --format json");
  INFO(a.errors);
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  auto j = nlohmann::json::parse(a.output);
  CHECK(j["meta"]["ci"].get<std::string>().find("bootstrap_draws") != std::string::npos);
  int redesigned = 0;
  for (const auto& row : j["tables"][0]["rows"]) {
    INFO(row["model"]);
    CHECK(row["dcrit"].get<double>() == Approx(kappa * std::log(row["width"].get<double>())));
    CHECK(row["dcrit_ci95"].is_array());
    if (!row["redesign"].is_null()) {
      CHECK(row["delta_loss"].is_number());  // A, α, γ, μ all fitted
      ++redesigned;
    }
  }
  CHECK(redesigned > 0);  // the check above ran
}

TEST_CASE("the two paper forms disagree on every flagship model - and --redesign-n counted keeps counted parameters") {
  auto r = run(audit() + " " + source("examples/flagship-models.csv") + " --format json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  const auto& rows = j["tables"][0]["rows"];
  for (const auto& row : rows) {
    INFO(row["model"]);
    CHECK(row["verdict_paper_log"] != "within D_crit");  // κ·ln W: every flagship is past D_crit
    CHECK(row["verdict_paper_tau"] == "within D_crit");  // 2.06·W^0.44: none is
  }
  auto c = run(audit() + " " + source("examples/flagship-models.csv") + " --redesign-n counted --format json");
  INFO(c.output);
  REQUIRE(c.exit_code == 0);
  auto jc = nlohmann::json::parse(c.output);
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& a = rows[i];
    const auto& b = jc["tables"][0]["rows"][i];
    if (a["model"] == "Mixtral 8x7B") {  // active non-embedding 12.6B vs 12·D·W² 6.4B: a wider redesign
      CHECK(b["redesign"]["n_original"].get<double>() == Approx(a["params_active"].get<double>() - 2 * 32000.0 * 4096));
      CHECK(b["redesign"]["width"].get<int>() > a["redesign"]["width"].get<int>());
    }
  }
}

TEST_CASE("audit paper as JSON: every section present and the Table 3 / Table 10 width pairs share their losses") {
  auto r = run(audit() + " paper --format json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  std::map<std::string, nlohmann::json> tables;
  for (const auto& t : j["tables"]) tables[t["id"].get<std::string>()] = t;
  for (const char* id : {"thresholds", "laws", "table10", "table9", "redesign", "params", "conflicts", "scales"})
    CHECK(tables.count(id) == 1);
  REQUIRE(tables["scales"]["rows"].size() == 5);
  for (const auto& row : tables["scales"]["rows"]) {
    CHECK(row["loss_table3"] == row["loss_table10"]);
    CHECK(row["width_table3"].get<int>() < row["width_table10"].get<int>());
  }
  // Table 10 ratios are D / printed D_crit
  for (const auto& row : tables["table10"]["rows"])
    CHECK(row["printed_ratio"].get<double>() == Approx(row["ratio_printed_dcrit"].get<double>()).margin(0.0101));
  // the appendix values are reproduced by no form, Table 4's by 2.43·ln W
  for (const auto& row : tables["thresholds"]["rows"]) {
    std::string src = row["source"], by = row["reproduced_by"];
    if (src == "Table 4") CHECK(by == "2.43·ln W");
    if (src.rfind("C.0.3", 0) == 0) CHECK(by.rfind("none", 0) == 0);
  }
}

TEST_CASE("audit DIR walks the directory for config.json and summary.json, and an unknown model_type is warned about") {
  // before: a directory without a config.json of its own was "no such file"; an unknown
  // model_type silently took its MLP from the activation (a 27% different count)
  test::TempDir dir;
  namespace fs = std::filesystem;
  fs::create_directories(dir.path() + "/zoo/b-llama");
  fs::create_directories(dir.path() + "/zoo/a-gpt2");
  fs::copy_file(source("examples/hf-configs/llama-3-70b.json"), dir.path() + "/zoo/b-llama/config.json");
  fs::copy_file(source("examples/hf-configs/gpt2-xl.json"), dir.path() + "/zoo/a-gpt2/config.json");
  auto r = run(audit() + " " + dir.path() + "/zoo --format json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto rows = nlohmann::json::parse(r.output)["tables"][0]["rows"];
  REQUIRE(rows.size() == 2);
  auto empty = run(audit() + " " + dir.path() + "/zoo/a-gpt2/.. " + dir.path() + "/nothing-here");
  CHECK(empty.exit_code == 1);
  CHECK(empty.output.find("nothing-here") != std::string::npos);

  // configs named by their model (examples/hf-configs/) are found too; a run's other JSON
  // records are not configs and are left alone. (A walk that took only files named config.json found 1 row of the 9.)
  auto samples = run(audit() + " " + source("examples/hf-configs") + " --format json");
  INFO(samples.output);
  REQUIRE(samples.exit_code == 0);
  CHECK(nlohmann::json::parse(samples.output)["tables"][0]["rows"].size() == 9);
  write_file_atomic(dir.path() + "/zoo/a-gpt2/fit.json", R"({"format": "shapelaw.fit", "models": []})");
  write_file_atomic(dir.path() + "/zoo/mistral-7b.json", R"({"model_type": "mistral", "num_hidden_layers": 32,
    "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32, "vocab_size": 32000})");
  auto mixed = run(audit() + " " + dir.path() + "/zoo --format json");
  INFO(mixed.output);
  REQUIRE(mixed.exit_code == 0);
  CHECK(nlohmann::json::parse(mixed.output)["tables"][0]["rows"].size() == 3);
  fs::create_directories(dir.path() + "/bare/sub");
  auto bare = run(audit() + " " + dir.path() + "/bare");
  CHECK(bare.exit_code == 1);
  CHECK_THAT(bare.output, Catch::Contains("audit: error: " + dir.path() + "/bare: no config.json, summary.json or "
                                          "Hugging Face config"));

  nlohmann::json config = nlohmann::json::parse(read_file(source("examples/hf-configs/llama-3-70b.json")));
  config["model_type"] = "brand_new";
  write_file_atomic(dir.path() + "/new.json", config.dump());
  auto u = run(audit() + " " + dir.path() + "/new.json --format json");
  INFO(u.output);
  CHECK(u.exit_code == 0);
  CHECK(u.output.find("audit: warning: " + dir.path() + "/new.json: model_type 'brand_new' is not a family audit "
                      "knows: its MLP is taken as gated from the activation 'silu'") != std::string::npos);
}
