#include "catch.h"

#include <fstream>
#include <map>

#include "audit/hf_config.h"
#include "audit/model_table.h"
#include "audit/param_count.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
using namespace shapelaw::audit;

namespace {
ModelEntry load(const std::string& rel) { return model_from_hf_config_file(test::source(rel)); }
std::string write(const test::TempDir& dir, const std::string& text) {
  std::string path = dir.path() + "/config.json";
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_CASE("GPT-2 schema (n_layer/n_embd): learned positions tied biases GELU 4W") {
  auto m = load("examples/hf-configs/gpt2-xl.json");
  CHECK(m.arch.name == "gpt2-xl");
  CHECK(m.arch.depth == 48);
  CHECK(m.arch.width == 1600);
  CHECK(m.arch.heads == 25);
  CHECK(m.arch.mlp == Mlp::gelu);
  CHECK(m.arch.tied);
  CHECK(m.arch.learned_positions == 1024);
  CHECK(count_params(m.arch).total == 1557611200LL);
}

TEST_CASE("Llama schema (num_hidden_layers/hidden_size): GQA SwiGLU untied") {
  auto m = load("examples/hf-configs/llama-3-70b.json");
  CHECK(m.arch.depth == 80);
  CHECK(m.arch.width == 8192);
  CHECK(m.arch.kv_heads == 8);
  CHECK(m.arch.mlp == Mlp::swiglu);
  CHECK(m.arch.norm == Norm::rmsnorm);
  CHECK_FALSE(m.arch.tied);
  CHECK(count_params(m.arch).total == 70553706496LL);
}

TEST_CASE("MoE and latent-attention schemas: Mixtral and DeepSeek-V3") {
  auto mix = load("examples/hf-configs/mixtral-8x7b.json");
  CHECK(mix.kind == "moe");
  CHECK(mix.arch.experts == 8);
  CHECK(mix.arch.experts_active == 2);
  CHECK(count_params(mix.arch).total == 46702792704LL);

  auto ds = load("examples/hf-configs/deepseek-v3.json");
  CHECK(ds.arch.depth == 61);
  CHECK(ds.arch.experts == 256);
  CHECK(ds.arch.shared_experts == 1);
  CHECK(ds.arch.dense_layers == 3);
  CHECK(ds.arch.kv_lora_rank == 512);
  ParamCount c = count_params(ds.arch);
  CHECK(c.total == Approx(671e9).epsilon(0.005));        // DeepSeek-V3 report: 671B (MTP module excluded)
  CHECK(c.active_total == Approx(37e9).epsilon(0.02));   // 37B activated
  CHECK_FALSE(ds.count_note.empty());                    // says the MTP module is not counted
}

TEST_CASE("d_model/n_layers schema (MPT) from a directory holding config.json and Falcon Gemma 2 Qwen2 BLOOM") {
  std::vector<std::string> errors;
  auto mpt = load_models({test::source("examples/hf-configs/mpt-7b")}, false, &errors);
  REQUIRE(mpt.size() == 1);
  CHECK(mpt[0].arch.name == "mpt-7b");
  CHECK(mpt[0].arch.depth == 32);
  CHECK(mpt[0].arch.width == 4096);
  CHECK(mpt[0].arch.effective_ffn() == 4 * 4096);
  CHECK(count_params(mpt[0].arch).total == Approx(6.65e9).epsilon(0.01));

  auto gemma = load("examples/hf-configs/gemma-2-27b.json");
  CHECK(gemma.arch.mlp == Mlp::geglu);
  CHECK(gemma.arch.head_dim == 128);  // 32 × 128 ≠ 4608: explicit head_dim
  CHECK(count_params(gemma.arch).non_embedding == Approx(26.047e9).epsilon(0.001));
  auto falcon = load("examples/hf-configs/falcon-180b.json");
  CHECK(falcon.arch.kv_heads == 8);
  CHECK(count_params(falcon.arch).total == Approx(180e9).epsilon(0.01));
  auto qwen = load("examples/hf-configs/qwen2.5-72b.json");
  CHECK(qwen.arch.qkv_bias);
  CHECK(count_params(qwen.arch).total == Approx(72.7e9).epsilon(0.001));
  auto bloom = load("examples/hf-configs/bloom-176b.json");
  CHECK(bloom.arch.embedding_norm);
  CHECK(count_params(bloom.arch).total == 176247271424LL);
}

TEST_CASE("each shipped config counts exactly like its flagship-models.csv row") {
  auto rows = load_models_csv(test::source("examples/flagship-models.csv"), false, nullptr);
  std::map<std::string, std::string> pairs = {
      {"gpt2-xl.json", "GPT-2 XL"},         {"llama-3-70b.json", "Llama 3 70B"}, {"mixtral-8x7b.json", "Mixtral 8x7B"},
      {"qwen2.5-72b.json", "Qwen2.5 72B"},  {"gemma-2-27b.json", "Gemma 2 27B"}, {"falcon-180b.json", "Falcon 180B"},
      {"deepseek-v3.json", "DeepSeek-V3"}, {"bloom-176b.json", "BLOOM 176B"}};
  for (const auto& [file, name] : pairs) {
    INFO(file);
    auto cfg = load("examples/hf-configs/" + file);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const ModelEntry& m) { return m.arch.name == name; });
    REQUIRE(it != rows.end());
    ParamCount a = count_params(cfg.arch), b = count_params(it->arch);
    CHECK(a.total == b.total);
    CHECK(a.active_total == b.active_total);
    CHECK(cfg.arch.depth == it->arch.depth);
    CHECK(cfg.arch.width == it->arch.width);
  }
}

TEST_CASE("bad configs: one message naming the file and field") {
  test::TempDir dir;
  auto expect = [&](const std::string& text, const std::string& fragment) {
    std::string path = write(dir, text);
    INFO(text);
    REQUIRE_THROWS_AS(model_from_hf_config_file(path), Error);
    REQUIRE_THROWS_WITH(model_from_hf_config_file(path), Catch::Contains(path) && Catch::Contains(fragment));
  };
  expect(R"({"model_type": "t5", "d_model": 512, "num_layers": 6, "is_encoder_decoder": true, "vocab_size": 32128})",
         "field 'is_encoder_decoder'");
  expect(R"({"model_type": "mystery", "width": 512, "vocab_size": 10})",
         "unknown config schema (model_type 'mystery'): no layer count");
  expect(R"({"num_hidden_layers": 4, "vocab_size": 10})", "no width");
  expect(R"({"num_hidden_layers": "32", "hidden_size": 4096, "vocab_size": 10})",
         "field 'num_hidden_layers': expected an integer, got \"32\"");
  expect(R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 1000, "num_attention_heads": 24,
             "intermediate_size": 2000, "vocab_size": 10})",
         "field 'hidden_size': 1000 is not divisible by heads 24");
  expect(R"({"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
             "intermediate_size": 128, "num_local_experts": 8, "vocab_size": 10})",
         "field 'num_experts_per_tok': missing");
  expect(R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64})", "field 'vocab_size': missing");
  expect("{not json", "not valid JSON");
}

TEST_CASE("nested text_config (multimodal wrappers) is read") {
  test::TempDir dir;
  std::string path = write(dir, R"({"model_type": "llava", "text_config": {"model_type": "llama", "num_hidden_layers": 32,
      "hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32064,
      "tie_word_embeddings": false}})");
  auto m = model_from_hf_config_file(path);
  CHECK(m.arch.depth == 32);
  CHECK(m.arch.mlp == Mlp::swiglu);
  CHECK_FALSE(m.arch.tied);
}

TEST_CASE("an absent tie_word_embeddings takes the config class default") {
  test::TempDir dir;
  auto llama = model_from_hf_config_file(write(dir, R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "intermediate_size": 172, "vocab_size": 100})"));
  CHECK_FALSE(llama.arch.tied);  // LlamaConfig default
  auto gpt2 = model_from_hf_config_file(write(dir, R"({"model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 4,
      "vocab_size": 100})"));
  CHECK(gpt2.arch.tied);  // PretrainedConfig default
}
