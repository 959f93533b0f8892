// End-to-end tests of the fit-law tool: inputs, bad-input messages, outputs.
#include "catch.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "util/atomic_file.h"

using namespace shapelaw;
using nlohmann::json;

namespace {

std::string fitlaw() { return test::bin("fit-law"); }

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// (depth, width, loss) of six runs on a Kaplan-like loss surface
const std::vector<std::tuple<int, int, double>> kSixRuns = {
    {2, 256, 4.3}, {4, 256, 4.1}, {8, 512, 3.62}, {16, 512, 3.44}, {8, 1024, 3.40}, {16, 1024, 3.13}};

// kSixRuns as summary.json files in dir/run0..run5;
// tokenizer(i), when given, names run i's tokenizer hash.
void write_six_summaries(const std::string& dir, const std::function<std::string(int)>& tokenizer = {}) {
  int i = 0;
  for (auto [D, W, L] : kSixRuns) {
    std::string run = dir + "/run" + std::to_string(i);
    std::filesystem::create_directories(run);
    json s = {{"format", "shapelaw.summary"}, {"version", 1}, {"run_id", "r" + std::to_string(i + 1)},
              {"depth", D}, {"width", W}, {"final_val_loss", L}, {"tokens", 1000000},
              {"params", {{"total", 12.0 * D * W * W + 2 * 50257.0 * W}, {"non_embedding", 12.0 * D * W * W}}}};
    if (tokenizer) s["tokenizer_sha256"] = tokenizer(i);
    write(run + "/summary.json", s.dump());
    ++i;
  }
}

// A clean synthetic table (kaplan-E law, 2% noise free) for the quick CLI checks.
std::string small_csv() {
  return "run,depth,width,loss,tokens\n"
         "a,2,256,4.30,6.4e9\n"
         "b,4,256,4.10,6.4e9\n"
         "c,8,512,3.62,6.4e9\n"
         "d,16,512,3.44,6.4e9\n"
         "e,8,1024,3.40,6.4e9\n"
         "f,16,1024,3.13,6.4e9\n"
         "g,8,1536,3.10,6.4e9\n"
         "h,16,1536,3.05,6.4e9\n";
}

const char* kQuick = " -B 20 --optimal-draws 5 -j 2 ";

}  // namespace

TEST_CASE("fit-law lists its models") {
  auto r = test::run(fitlaw() + " --list-models");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"paper-log", "paper-power", "no-phi", "paper-log-E", "kaplan", "kaplan-E", "chinchilla",
                           "tau-power", "tau-log"})
    CHECK_THAT(r.output, Catch::Contains(name));
}

TEST_CASE("a non-numeric field is rejected with file and line") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  write(csv, "run,depth,width,loss\na,2,256,4.3\nb,4,256,oops\n");
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan -B 0");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(csv + ":3:"));
  CHECK_THAT(r.output, Catch::Contains("'oops'"));
}

TEST_CASE("a missing required column names the field and the line") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  write(csv, "run,depth,width\na,2,256\n");
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan -B 0");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(csv + ":2: missing required field 'loss' (column 'loss')"));
  // a tau table is fitted against width
  write(csv, "run,depth,tau\na,2,4.3\n");
  auto t = test::run(fitlaw() + " --tau " + csv + " -B 0");
  CHECK(t.exit_code == 1);
  CHECK_THAT(t.output, Catch::Contains(csv + ":2: missing required field 'width'"));
  // neither a shape nor a parameter count: no N
  write(csv, "run,depth,loss\na,2,4.3\nb,4,4.1\n");
  auto n = test::run(fitlaw() + " " + csv + " -m kaplan -B 0");
  CHECK(n.exit_code == 1);
  CHECK_THAT(n.output, Catch::Contains("no parameter count N"));
  // a shape for some rows only
  write(csv, "run,depth,width,loss,params\na,2,256,4.3,1e6\nb,,,4.1,2e6\n");
  auto some = test::run(fitlaw() + " " + csv + " -m kaplan -B 0");
  CHECK(some.exit_code == 1);
  CHECK_THAT(some.output, Catch::Contains(csv + ":3: no depth for this row, but " + csv + ":2"));
}

TEST_CASE("a row with the wrong number of fields is rejected, or skipped on request") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  write(csv, small_csv() + "bad,1,2\n");
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan -B 0 --no-loo");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(csv + ":10: expected 5 fields"));
  auto s = test::run(fitlaw() + " " + csv + " -m kaplan -B 0 --no-loo --skip-bad-rows");
  INFO(s.output);
  CHECK(s.exit_code == 0);
  CHECK_THAT(s.output, Catch::Contains("warning: skipped " + csv + ":10"));
}

TEST_CASE("non-positive values, unknown models, bad --col and bad flags fail cleanly") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  write(csv, "run,depth,width,loss\na,0,256,4.3\n");
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(csv + ":2: field 'depth' (column 'depth') must be > 0"));

  write(csv, small_csv());
  auto m = test::run(fitlaw() + " " + csv + " -m no-such-law");
  CHECK(m.exit_code == 1);
  CHECK_THAT(m.output, Catch::Contains("unknown model 'no-such-law'"));

  auto c = test::run(fitlaw() + " " + csv + " --col size=width");
  CHECK(c.exit_code == 1);
  CHECK_THAT(c.output, Catch::Contains("unknown field 'size'"));

  auto f = test::run(fitlaw() + " " + csv + " --format yaml");
  CHECK(f.exit_code == 2);
  CHECK_THAT(f.output, Catch::Contains("--format"));

  auto missing = test::run(fitlaw() + " " + dir.path() + "/nope.csv");
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("nope.csv: no such file or directory"));

  auto none = test::run(fitlaw());
  CHECK(none.exit_code == 2);
}

TEST_CASE("tokens known for some rows only are an error naming the row") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  write(csv, "run,depth,width,loss,tokens\na,2,256,4.3,6.4e9\nb,4,512,3.8,\nc,8,1024,3.4,6.4e9\n");
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan -B 0");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(csv + ":3: tokens unknown for this row"));
}

TEST_CASE("duplicate runs are reported") {
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  write(csv, small_csv() + "a,2,256,4.31,6.4e9\n");
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan -B 0 --no-loo");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("duplicate run 'a'"));
}

TEST_CASE("column mapping with scale, fit.json shape, predictions CSV, formats") {
  test::TempDir dir;
  std::string csv = dir.path() + "/t.csv";
  write(csv, "name,L_layers,d_model,val,tok_b\n"
             "a,2,256,4.30,6.4\nb,4,256,4.10,6.4\nc,8,512,3.62,6.4\nd,16,512,3.44,6.4\n"
             "e,8,1024,3.40,6.4\nf,16,1024,3.13,6.4\ng,8,1536,3.10,6.4\nh,16,1536,3.05,6.4\n");
  std::string out = dir.path() + "/fit.json", pred = dir.path() + "/pred.csv";
  auto r = test::run(fitlaw() + " " + csv +
                     " --col run=name --col depth=L_layers --col width=d_model --col loss=val --col tokens=tok_b*1e9"
                     " -m kaplan,kaplan-E,paper-log" + kQuick + "-o " + out + " --predictions " + pred);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  CHECK(j["format"] == "shapelaw.fit");
  CHECK(j["version"] == 1);
  CHECK(j["input_sha256"].get<std::string>().size() == 64);
  CHECK(j["seed"] == 42);
  REQUIRE(j["models"].size() == 3);
  const json& pl = j["models"][2];
  CHECK(pl["name"] == "paper-log");
  CHECK(pl["not_identifiable"] == json({"B", "delta"}));
  CHECK(pl["dcrit"]["form"] == "log");
  CHECK(pl["dcrit"]["kappa"].is_number());
  for (const auto& name : pl["param_names"]) {
    const json& p = pl["params"][name.get<std::string>()];
    CHECK(p["estimate"].is_number());
    CHECK(p.contains("ci95_bootstrap"));
    CHECK(p.contains("ci95_jacobian"));
    CHECK(p.contains("se"));
  }
  CHECK(pl["bootstrap_draws"].size() > 0);
  CHECK(pl["bootstrap_draws"][0].size() == pl["param_names"].size());
  for (const char* k : {"n", "r2", "rmse", "aic", "aicc", "bic", "loo_rmse"}) CHECK(pl["metrics"].contains(k));
  CHECK(j["selected_model"].is_string());
  CHECK(j["comparison"]["table"].size() == 3);
  CHECK(j["input"]["tokens_vary"] == false);
  std::string p = read_file(pred);
  CHECK(p.rfind("model,run,source,line,depth,width,N,T,observed,predicted,residual", 0) == 0);
  CHECK(std::count(p.begin(), p.end(), '\n') == 1 + 3 * 8);

  auto js = test::run_stdout(fitlaw() + " " + csv + " --col depth=L_layers --col width=d_model --col loss=val -m kaplan -B 5 "
                                             "--format json");
  INFO(js.errors);
  INFO(js.output);
  REQUIRE(js.exit_code == 0);
  CHECK(json::parse(js.output)["models"][0]["name"] == "kaplan");
  auto md = test::run(fitlaw() + " " + csv + " --col depth=L_layers --col width=d_model --col loss=val -m kaplan -B 5 --format markdown");
  CHECK_THAT(md.output, Catch::Contains("| param"));
  auto cs = test::run(fitlaw() + " " + csv + " --col depth=L_layers --col width=d_model --col loss=val -m kaplan -B 5 --format csv");
  CHECK_THAT(cs.output, Catch::Contains("kaplan,param,alpha,"));
}

TEST_CASE("summary.json files are found in a directory, and an unknown format version is refused") {
  test::TempDir dir;
  write_six_summaries(dir.path());
  std::string out = dir.path() + "/fit.json";
  auto r = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5 -o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  CHECK(j["input"]["rows"] == 6);
  CHECK(j["options"]["n_source"] == "auto");

  std::filesystem::create_directories(dir.path() + "/future");
  write(dir.path() + "/future/summary.json", R"({"format":"shapelaw.summary","version":2,"depth":2,"width":2,"final_val_loss":1})");
  auto v = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5");
  CHECK(v.exit_code == 1);
  CHECK_THAT(v.output, Catch::Contains("future/summary.json: field 'version': 2 is newer than this tool understands (at most 1)"));
}

TEST_CASE("runs from different tokenizers are refused, or fitted with a warning on request") {
  // the same corpus and settings give a different tokenizer under another sentencepiece
  // version: losses per token from the two are different quantities
  test::TempDir dir;
  write_six_summaries(dir.path(), [](int i) { return i < 4 ? "49d42cf85392eaa0c49b" : "4063f5e8163219fb1f82"; });
  auto refused = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5");
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Catch::Contains("the rows come from 2 different tokenizers"));
  CHECK_THAT(refused.output, Catch::Contains("4063f5e81632: 2 row(s), e.g. "));
  CHECK_THAT(refused.output, Catch::Contains("49d42cf85392: 4 row(s), e.g. "));
  CHECK_THAT(refused.output, Catch::Contains("--allow-mixed-tokenizers"));

  std::string out = dir.path() + "/fit.json";
  auto allowed = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5 --allow-mixed-tokenizers -o " + out);
  INFO(allowed.output);
  REQUIRE(allowed.exit_code == 0);
  CHECK_THAT(allowed.output, Catch::Contains("2 different tokenizers"));
  json j = json::parse(read_file(out));
  CHECK(j["input"]["tokenizers"].size() == 2);
  CHECK(j["input"]["rows"] == 6);

  // one tokenizer (or none named): nothing to say
  for (int k = 4; k < 6; ++k) std::filesystem::remove_all(dir.path() + "/run" + std::to_string(k));
  auto one = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5 -o " + out);
  INFO(one.output);
  CHECK(one.exit_code == 0);
  CHECK(json::parse(read_file(out))["input"]["tokenizers"].size() == 1);
}

TEST_CASE("runs of GPT-2's tokenizer and of a sentencepiece one are refused together, each named by kind") {
  test::TempDir dir;
  write_six_summaries(dir.path(), [](int i) { return i < 3 ? "00f404d36600411e497e" : "49d42cf85392eaa0c49b"; });
  for (int i = 0; i < 6; ++i) {
    const std::string path = dir.path() + "/run" + std::to_string(i) + "/summary.json";
    json s = json::parse(read_file(path));
    s["tokenizer_kind"] = i < 3 ? "gpt2" : "sentencepiece";
    write(path, s.dump());
  }
  auto refused = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5");
  INFO(refused.output);
  CHECK(refused.exit_code == 1);
  CHECK_THAT(refused.output, Catch::Contains("the rows come from 2 different tokenizers"));
  CHECK_THAT(refused.output, Catch::Contains("gpt2 00f404d36600: 3 row(s), e.g. "));
  CHECK_THAT(refused.output, Catch::Contains("sentencepiece 49d42cf85392: 3 row(s), e.g. "));
  std::string out = dir.path() + "/fit.json";
  auto allowed = test::run(fitlaw() + " " + dir.path() + " -m kaplan -B 5 --allow-mixed-tokenizers -o " + out);
  INFO(allowed.output);
  REQUIRE(allowed.exit_code == 0);
  json j = json::parse(read_file(out));
  CHECK(j["input"]["tokenizer_kinds"]["00f404d36600411e497e"] == "gpt2");
  CHECK(j["input"]["tokenizer_kinds"]["49d42cf85392eaa0c49b"] == "sentencepiece");
}

TEST_CASE("a probe-grads tau table fits tau-power and tau-log against width") {
  test::TempDir dir;
  std::string csv = dir.path() + "/tau.csv";
  write(csv, "run,depth,width,step,tau,tau_lo,tau_hi,r2,dcrit\n"
             "a,16,256,1000,23.2,22,24,0.99,\nb,16,512,1000,31.4,30,33,0.99,\nc,16,768,1000,37.9,36,39,0.99,\n"
             "d,16,1024,1000,43.0,41,45,0.99,\ne,16,1536,1000,51.6,50,53,0.99,\n");
  std::string out = dir.path() + "/fit.json";
  auto r = test::run(fitlaw() + " --tau " + csv + kQuick + "-o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  REQUIRE(j["models"].size() == 2);
  CHECK(j["models"][0]["name"] == "tau-power");
  CHECK(j["models"][0]["params"]["a"]["estimate"].get<double>() == Approx(0.44).margin(0.03));
  CHECK(j["models"][1]["name"] == "tau-log");
  CHECK(j["selected_model"] == "tau-power");
  auto bad = test::run(fitlaw() + " --tau " + csv + " -m paper-log -B 0");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("fits loss, but the input is a tau table"));
}

TEST_CASE("the refit of the paper's 30 runs runs and finds a depth penalty") {
  test::TempDir dir;
  std::string out = dir.path() + "/fit.json";
  auto r = test::run(fitlaw() + " " + test::source("examples/paper/paper30.csv") +
                     " -m paper-log,no-phi --loss ls --space loss --no-loo --holdout 0" + kQuick + "-o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  CHECK(j["input"]["rows"] == 30);
  const json& pl = j["models"][0];
  CHECK(pl["metrics"]["n"] == 30);
  double kappa = pl["params"]["kappa"]["estimate"];
  CHECK(kappa > 1.0);
  CHECK(kappa < 4.0);
  CHECK(j["comparison"]["likelihood_ratio"].size() == 1);
  CHECK(pl["metrics"]["r2"].get<double>() > 0.9);
}

TEST_CASE("groups are resampled whole, --weights se needs loss_se, --grid and --fix are honoured") {
  test::TempDir dir;
  std::string csv = dir.path() + "/g.csv";
  write(csv, "run,group,depth,width,loss,loss_se\n"
             "a,s1,2,256,4.30,0.01\nb,s1,4,256,4.10,0.01\nc,s2,8,512,3.62,0.02\nd,s2,16,512,3.44,0.02\n"
             "e,s3,8,1024,3.40,0.01\nf,s3,16,1024,3.13,0.01\ng,s4,8,1536,3.10,0.02\nh,s4,16,1536,3.05,0.01\n");
  std::string out = dir.path() + "/fit.json";
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan-E --weights se --grid alpha=0.1:0.3 --fix E=1.5" + kQuick +
                     "-o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  CHECK(j["input"]["groups"] == 4);
  CHECK(j["options"]["weights"] == "se");
  CHECK(j["options"]["grids"]["alpha"] == json({0.1, 0.3}));
  const json& m = j["models"][0];
  CHECK(m["bootstrap"]["by_group"] == true);
  CHECK(m["fit"]["starts"] == 2);
  CHECK(m["params"]["E"]["fixed"] == true);
  CHECK(m["params"]["E"]["estimate"] == 1.5);
  CHECK(m["metrics"]["k"] == 2);

  write(csv, small_csv());
  auto w = test::run(fitlaw() + " " + csv + " -m kaplan --weights se -B 0");
  CHECK(w.exit_code == 1);
  CHECK_THAT(w.output, Catch::Contains(csv + ":2: --weights se: row has no positive loss_se"));
  auto g = test::run(fitlaw() + " " + csv + " -m kaplan --grid alpha=x");
  CHECK(g.exit_code == 1);
  CHECK_THAT(g.output, Catch::Contains("--grid 'alpha=x'"));
}

TEST_CASE("JSONL tables are read with dotted paths, and a bad JSON line names file and line") {
  test::TempDir dir;
  std::string jl = dir.path() + "/runs.jsonl";
  std::string body;
  for (auto [D, W, L] : kSixRuns)
    body += json({{"arch", {{"layers", D}, {"d_model", W}}}, {"eval", {{"loss", L}}}}).dump() + "\n";
  write(jl, body);
  auto r = test::run_stdout(fitlaw() + " " + jl + " --col depth=arch.layers --col width=arch.d_model --col loss=eval.loss"
                                          " -m kaplan -B 5 --format json");
  INFO(r.errors);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(json::parse(r.output)["input"]["rows"] == 6);
  write(jl, body + "{not json\n");
  auto bad = test::run(fitlaw() + " " + jl + " --col depth=arch.layers --col width=arch.d_model --col loss=eval.loss -m kaplan");
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains(jl + ":7: not valid JSON"));
  std::string sj = dir.path() + "/summary.json";
  write(sj, "{\"format\": \"something.else\"}");
  auto wrong = test::run(fitlaw() + " " + sj);
  CHECK(wrong.exit_code == 1);
  CHECK_THAT(wrong.output, Catch::Contains("expected \"shapelaw.summary\""));
}

TEST_CASE("a law with every parameter held by --fix is evaluated, not fitted (it crashed before)") {
  test::TempDir dir;
  std::string csv = dir.path() + "/t.csv", out = dir.path() + "/fit.json";
  write(csv, small_csv());
  auto r = test::run(fitlaw() + " " + csv + " -m kaplan,paper-log,no-phi --fix A=20 --fix alpha=0.1 --fix B_T=0.5" +
                     " --fix gamma=0.1 --fix kappa=2 --fix mu=0.5" + kQuick + "-o " + out);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  json j = json::parse(read_file(out));
  // kaplan at the held values, by hand: N = 12*D*W^2 (no parameter column), RMSE in loss units
  const std::vector<std::tuple<double, double, double>> rows = {
      {2, 256, 4.30}, {4, 256, 4.10}, {8, 512, 3.62}, {16, 512, 3.44},
      {8, 1024, 3.40}, {16, 1024, 3.13}, {8, 1536, 3.10}, {16, 1536, 3.05}};
  double ss = 0;
  for (auto [D, W, L] : rows) {
    const double f = 20.0 / std::pow(12 * D * W * W, 0.1);
    ss += (f - L) * (f - L);
  }
  std::map<std::string, json> by_name;
  for (const auto& m : j["models"]) by_name[m["name"]] = m;
  for (const char* name : {"kaplan", "paper-log", "no-phi"}) {
    INFO(name);
    REQUIRE(by_name.count(name));
    const json& m = by_name[name];
    CHECK(m["evaluated"] == true);
    CHECK(m["metrics"]["k"] == 0);
    CHECK(m["fit"]["status"] == "evaluated: every parameter is held (--fix)");
    CHECK(m["bootstrap"]["used"] == 0);
    CHECK(m["bootstrap"]["reason"] == "every parameter is held: nothing to resample");
    CHECK(m["bootstrap_draws"].empty());
  }
  CHECK(by_name["kaplan"]["metrics"]["rmse"].get<double>() == Approx(std::sqrt(ss / rows.size())).epsilon(1e-9));
  CHECK(by_name["kaplan"]["params"]["A"]["estimate"] == 20.0);
  // the LOO prediction of a law with nothing to fit is its prediction
  CHECK(by_name["kaplan"]["metrics"]["loo_rmse"].get<double>() ==
        Approx(by_name["kaplan"]["metrics"]["rmse"].get<double>()).epsilon(1e-12));
  // Φ and no-phi differ by no free parameter: no LR test, said so
  CHECK(j["comparison"]["likelihood_ratio"].empty());
  CHECK_THAT(r.output, Catch::Contains("no LR test paper-log vs no-phi: every parameter of the depth penalty is held"));
  CHECK_THAT(r.output, Catch::Contains("evaluated, not fitted"));
}

TEST_CASE("remaining bad-input paths: empty table, empty directory, unmatched glob, bad --fix and --compute-range, unfittable data") {
  test::TempDir dir;
  std::string empty = dir.path() + "/empty.csv";
  write(empty, "");
  auto e = test::run(fitlaw() + " " + empty);
  CHECK(e.exit_code == 1);
  CHECK_THAT(e.output, Catch::Contains("empty.csv: empty CSV file"));

  std::filesystem::create_directories(dir.path() + "/nothing");
  auto d = test::run(fitlaw() + " " + dir.path() + "/nothing");
  CHECK(d.exit_code == 1);
  CHECK_THAT(d.output, Catch::Contains("directory holds no summary.json"));

  auto g = test::run(fitlaw() + " '" + dir.path() + "/runs-*.csv'");
  CHECK(g.exit_code == 1);
  CHECK_THAT(g.output, Catch::Contains("pattern matches no file"));

  std::string csv = dir.path() + "/t.csv";
  write(csv, small_csv());
  auto f = test::run(fitlaw() + " " + csv + " --fix kappa");
  CHECK(f.exit_code == 1);
  CHECK_THAT(f.output, Catch::Contains("--fix 'kappa': expected NAME=NUMBER"));
  auto c = test::run(fitlaw() + " " + csv + " --compute-range 1e20:1e18");
  CHECK(c.exit_code == 1);
  CHECK_THAT(c.output, Catch::Contains("--compute-range"));

  // one depth only: the depth penalty is not identifiable, the law is skipped with the reason
  std::string flat = dir.path() + "/flat.csv";
  write(flat, "run,depth,width,loss\na,8,256,4.1\nb,8,512,3.6\nc,8,1024,3.4\nd,8,1536,3.1\ne,8,2048,3.0\n"
              "f,8,3072,2.9\ng,8,4096,2.8\nh,8,6144,2.75\n");
  std::string out = dir.path() + "/fit.json";
  auto s = test::run(fitlaw() + " " + flat + " -m paper-log,kaplan -B 5 -o " + out);
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  json j = json::parse(read_file(out));
  REQUIRE(j["skipped_models"].size() == 1);
  CHECK(j["skipped_models"][0]["name"] == "paper-log");
  CHECK_THAT(j["skipped_models"][0]["reason"].get<std::string>(), Catch::Contains("depth does not vary"));
  auto none = test::run(fitlaw() + " " + flat + " -m paper-log -B 5");
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.output, Catch::Contains("no model could be fitted"));
}

TEST_CASE("replicates: fit-law reports their spread and tests each law's lack of fit against it") {
  test::TempDir dir;
  const int configs[6][2] = {{2, 128}, {4, 128}, {4, 256}, {8, 256}, {8, 512}, {16, 512}};
  auto table = [&](double bump_at_depth_8) {
    std::string csv = "run,depth,width,loss\n";
    double ss = 0;
    for (int c = 0; c < 6; ++c) {
      const double D = configs[c][0], W = configs[c][1], N = 12 * D * W * W;
      double noise[3], mean = 0;
      for (int r = 0; r < 3; ++r) mean += (noise[r] = 0.01 * std::sin(7.0 * c + 3.0 * r + 1));
      mean /= 3;
      for (int r = 0; r < 3; ++r) {
        ss += (noise[r] - mean) * (noise[r] - mean);
        const double loss = 2 + 100 / std::pow(N, 0.3) + noise[r] + (D == 8 ? bump_at_depth_8 : 0);
        csv += "c" + std::to_string(c) + "s" + std::to_string(r) + "," + std::to_string(int(D)) + "," +
               std::to_string(int(W)) + "," + [&] { char b[32]; std::snprintf(b, sizeof b, "%.17g", loss); return std::string(b); }() + "\n";
      }
    }
    return std::make_pair(csv, std::sqrt(ss / 12));
  };
  auto fit = [&](const std::string& csv) {
    write(dir.path() + "/r.csv", csv);
    auto r = test::run(fitlaw() + " " + dir.path() + "/r.csv -m kaplan-E --loss ls --space loss -B 0 --no-loo -o " +
                       dir.path() + "/fit.json");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains("replicates: 6 configurations run more than once (18 rows)"));
    CHECK_THAT(r.output, Catch::Contains("lack of fit against the replicates' spread: F(3, 12)"));
    return json::parse(read_file(dir.path() + "/fit.json"));
  };
  auto [clean, noise_sd] = table(0);
  json j = fit(clean);
  CHECK(j["replicates"]["configurations"] == 6);
  CHECK(j["replicates"]["df"] == 12);
  CHECK(j["replicates"]["sd"].get<double>() == Approx(noise_sd).epsilon(1e-9));
  const json& lof = j["models"][0]["lack_of_fit"];
  CHECK(lof["df_lof"] == 18 - 3 - 12);  // rows - free parameters (E, A, alpha) - pure-error df
  CHECK(lof["p_value"].get<double>() > 0.01);  // the law that made the data fits to within the seed noise
  json bumped = fit(table(0.15).first);  // a depth effect no law of N alone can follow
  CHECK(bumped["models"][0]["lack_of_fit"]["p_value"].get<double>() < 1e-6);
}

TEST_CASE("hex, inf and nan are not numbers of a table (strtod takes them)") {
  // before: "0x10" was read as a loss of 16
  test::TempDir dir;
  std::string csv = dir.path() + "/runs.csv";
  for (std::string bad : {"0x10", "inf", "nan", "1p3"}) {
    write(csv, "run,depth,width,loss\na,2,256,4.3\nb,4,256," + bad + "\nc,8,512,3.6\n");
    auto r = test::run(fitlaw() + " " + csv + " -m kaplan -B 0");
    INFO(bad << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(csv + ":3:") && Catch::Contains("'" + bad + "'"));
  }
}
