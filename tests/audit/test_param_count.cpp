#include "catch.h"

#include "audit/arch.h"
#include "audit/param_count.h"

using namespace shapelaw::audit;

namespace {
Arch paper_arch(int64_t d, int64_t w) {
  Arch a;
  a.depth = d;
  a.width = w;
  a.vocab = 50257;
  a.mlp = Mlp::gelu;
  a.norm = Norm::layernorm;
  return a;
}
}  // namespace

TEST_CASE("paper GELU 4W model: 12·D·W² per block untied 2·V·W embeddings norms on top") {
  for (auto [d, w] : std::vector<std::pair<int64_t, int64_t>>{{16, 512}, {2, 256}, {64, 2816}, {32, 4096}}) {
    Arch a = paper_arch(d, w);
    ParamCount c = count_params(a);
    CHECK(c.paper_12DW2 == 12 * d * w * w);
    CHECK(c.embedding == 2 * 50257 * w);
    // two LayerNorms (weight + bias) per block and a final one
    CHECK(c.non_embedding == 12 * d * w * w + d * 2 * 2 * w + 2 * w);
    CHECK(c.total == c.embedding + c.non_embedding);
    CHECK(c.active_total == c.total);
  }
  // Table 9's 16L×512W (102.2M) and §4.8's 64L×2816 (6.38B) follow this convention.
  CHECK(count_params(paper_arch(16, 512)).total == Approx(102.2e6).epsilon(0.005));
  CHECK(count_params(paper_arch(64, 2816)).total == Approx(6.38e9).epsilon(0.002));
}

TEST_CASE("a gated MLP with the default F = round(8W/3) keeps ≈ 12·W² per block - SwiGLU with F = 4W is 16·W²") {
  Arch a = paper_arch(8, 768);
  a.mlp = Mlp::swiglu;
  CHECK(a.effective_ffn() == 2048);
  CHECK(count_params(a).non_embedding - 8 * 2 * 2 * 768 - 2 * 768 == 12 * 8 * 768 * 768);
  a.ffn = 4 * 768;
  CHECK(count_params(a).non_embedding - 8 * 2 * 2 * 768 - 2 * 768 == 16 * 8 * 768 * 768);
}

TEST_CASE("grouped-query attention shrinks K and V - multi-query keeps one head") {
  Arch a = paper_arch(1, 4096);
  a.heads = 32;
  a.norm = Norm::rmsnorm;
  a.vocab = 0;
  a.ffn = 1;  // isolate attention: MLP of 2·W
  int64_t mha = count_params(a).non_embedding;
  a.kv_heads = 8;
  int64_t gqa = count_params(a).non_embedding;
  CHECK(mha - gqa == 2 * 4096 * (4096 - 8 * 128));
  a.kv_heads = 1;
  CHECK(mha - count_params(a).non_embedding == 2 * 4096 * (4096 - 128));
}

TEST_CASE("known released checkpoints are counted exactly") {
  Arch gpt2;  // HF gpt2-xl: 1,557,611,200
  gpt2.depth = 48, gpt2.width = 1600, gpt2.heads = 25, gpt2.vocab = 50257, gpt2.tied = true, gpt2.biases = true;
  gpt2.learned_positions = 1024;
  CHECK(count_params(gpt2).total == 1557611200LL);

  Arch llama;  // Llama 2 70B: 68,976,648,192
  llama.depth = 80, llama.width = 8192, llama.heads = 64, llama.kv_heads = 8, llama.ffn = 28672, llama.vocab = 32000;
  llama.mlp = Mlp::swiglu, llama.norm = Norm::rmsnorm;
  CHECK(count_params(llama).total == 68976648192LL);

  Arch mixtral = llama;  // Mixtral 8x7B: 46,702,792,704 total, 12.9B active
  mixtral.depth = 32, mixtral.width = 4096, mixtral.heads = 32, mixtral.ffn = 14336;
  mixtral.experts = 8, mixtral.experts_active = 2;
  ParamCount c = count_params(mixtral);
  CHECK(c.total == 46702792704LL);
  CHECK(c.active_total == Approx(12.9e9).epsilon(0.005));
  CHECK(c.active_non_embedding < c.non_embedding);
}

TEST_CASE("implied width inverts the count") {
  Arch a = paper_arch(64, 2896);
  CHECK(implied_width(a, static_cast<double>(count_params(a).total)) == Approx(2896).margin(0.5));
  // Table 10 / Table 7 state 7.08B for 64 layers: that needs W ≈ 2971, not 2896 (and 2816 gives 6.38B).
  CHECK(implied_width(a, 7.08e9) == Approx(2971).margin(2));
  CHECK(implied_width(a, 6.38e9) == Approx(2817).margin(2));
}

TEST_CASE("structural validation names the field") {
  Arch a = paper_arch(12, 1000);
  a.heads = 24;
  CHECK(validate(a).rfind("width:", 0) == 0);
  a.head_dim = 64;  // explicit head_dim: allowed (Gemma 2 style)
  CHECK(validate(a).empty());
  a.kv_heads = 5;
  CHECK(validate(a).rfind("kv_heads:", 0) == 0);
  Arch m = paper_arch(4, 512);
  m.experts = 8;
  CHECK(validate(m).rfind("experts_active:", 0) == 0);
  Arch z = paper_arch(0, 512);
  CHECK(validate(z).rfind("depth:", 0) == 0);
}
