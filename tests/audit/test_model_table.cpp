#include "catch.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "audit/model_table.h"
#include "audit/param_count.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
using namespace shapelaw::audit;

namespace {
std::string write(const test::TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.path() + "/" + name;
  std::ofstream(path) << text;
  return path;
}
const char* kHeader = "name,depth,width,heads,vocab,mlp,params\n";
}  // namespace

TEST_CASE("every shipped flagship row parses and its stated count agrees with the recomputed one or says why") {
  auto models = load_models_csv(test::source("examples/flagship-models.csv"), false, nullptr);
  REQUIRE(models.size() >= 15);
  std::set<std::string> names;
  int moe = 0;
  for (const auto& m : models) {
    INFO(m.arch.name << " (" << m.origin << ")");
    names.insert(m.arch.name);
    CHECK(!m.source_arch.empty());
    CHECK(!m.source_params.empty());
    CHECK(m.arch.heads > 0);
    CHECK(m.arch.vocab > 0);
    REQUIRE(m.stated_params > 0);
    ParamCount c = count_params(m.arch);
    double diff = m.stated_params / static_cast<double>(c.total) - 1.0;
    if (std::fabs(diff) > 0.02) CHECK_FALSE(m.count_note.empty());
    else CHECK(m.count_note.empty());  // a note only where it is needed
    CHECK(std::fabs(diff) < 0.10);  // even documented exceptions are near
    if (m.kind == "moe") {
      ++moe;
      CHECK(m.arch.is_moe());
      REQUIRE(m.stated_active > 0);
      CHECK(m.stated_active / static_cast<double>(c.active_total) == Approx(1.0).epsilon(0.02));
    }
  }
  CHECK(moe >= 2);
  for (const char* required : {"GPT-2 XL", "GPT-3 175B", "Gopher 280B", "Chinchilla 70B", "PaLM 540B", "OPT-175B",
                               "BLOOM 176B", "Llama 2 70B", "Llama 3 70B", "Llama 3.1 405B", "Mistral 7B",
                               "Mixtral 8x7B", "Falcon 180B", "Qwen2.5 72B", "Gemma 2 27B", "DeepSeek-V3"})
    CHECK(names.count(required) == 1);
}

TEST_CASE("bad rows: one message naming file line and field") {
  test::TempDir dir;
  auto expect = [&](const std::string& row, const std::string& fragment) {
    std::string path = write(dir, "bad.csv", std::string(kHeader) + row + "\n");
    INFO(row);
    REQUIRE_THROWS_AS(load_models_csv(path, false, nullptr), Error);
    REQUIRE_THROWS_WITH(load_models_csv(path, false, nullptr),
                        Catch::Contains(path + ":2: ") && Catch::Contains(fragment));
  };
  expect("m,,1024,16,50257,gelu,1B", "field 'depth': missing value");
  expect("m,twelve,1024,16,50257,gelu,1B", "field 'depth': 'twelve' is not an integer");
  expect("m,12,1000,24,50257,gelu,1B", "field 'width': 1000 is not divisible by heads 24");
  expect("m,12,1024,16,50257,relu2x,1B", "field 'mlp': 'relu2x'");
  expect("m,12,1024,16,50257,gelu,lots", "field 'params': 'lots' is not a parameter count");
  expect("m,12,1024,16", "expected 7 fields");

  std::string no_width = write(dir, "nowidth.csv", "name,depth\nm,12\n");
  REQUIRE_THROWS_WITH(load_models_csv(no_width, false, nullptr), Catch::Contains("missing column 'width'"));
}

TEST_CASE("keep-going: bad rows are reported the others kept") {
  test::TempDir dir;
  std::string path = write(dir, "mixed.csv",
                           std::string(kHeader) + "good,12,1024,16,50257,gelu,200M\nbad,12,1000,24,50257,gelu,1B\n"
                                                  "also-good,24,2048,16,50257,gelu,1.3B\n");
  std::vector<std::string> errors;
  auto models = load_models_csv(path, true, &errors);
  REQUIRE(models.size() == 2);
  CHECK(models[1].arch.name == "also-good");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find(path + ":3: field 'width'") != std::string::npos);
}

TEST_CASE("extra key=value column and counts with unit suffixes") {
  test::TempDir dir;
  std::string path = write(dir, "x.csv",
                           "name,depth,width,heads,vocab,params,extra\n"
                           "q,2,512,8,1000,\"1.5M\",qkv_bias=true;norms_per_layer=4\n"
                           "r,2,512,8,1000,3e6,bogus=1\n");
  REQUIRE_THROWS_WITH(load_models_csv(path, false, nullptr), Catch::Contains(":3: field 'extra': unknown key 'bogus'"));
  std::vector<std::string> errors;
  auto models = load_models_csv(path, true, &errors);
  REQUIRE(models.size() == 1);
  CHECK(models[0].arch.qkv_bias);
  CHECK(models[0].arch.norms_per_layer == 4);
  CHECK(models[0].stated_params == 1.5e6);
}

TEST_CASE("a train summary.json (or its run directory) is audited as a model") {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/run-16x512");
  const int64_t total = 12LL * 16 * 512 * 512 + 2LL * 50257 * 512 + 16 * 4 * 512 + 2 * 512;
  write(dir, "run-16x512/summary.json",
        R"({"format": "shapelaw.summary", "version": 1, "run_id": "r16", "depth": 16, "width": 512, "heads": 8,
            "head_dim": 64, "vocab_size": 50257, "seq_len": 1024, "mlp": "gelu", "norm": "layernorm",
            "tie_embeddings": false, "params": {"total": )" + std::to_string(total) + "}}");
  std::vector<std::string> errors;
  auto models = load_models({dir.path() + "/run-16x512"}, false, &errors);
  REQUIRE(models.size() == 1);
  CHECK(models[0].arch.name == "r16");
  CHECK(models[0].stated_params == total);
  CHECK(count_params(models[0].arch).total == total);
  std::filesystem::create_directories(dir.path() + "/bad");
  write(dir, "bad/summary.json", R"({"format": "shapelaw.summary", "version": 1, "depth": 16, "vocab_size": 10})");
  REQUIRE_THROWS_WITH(load_models({dir.path() + "/bad/summary.json"}, false, nullptr),
                      Catch::Contains("bad/summary.json: field 'width': missing"));
}
