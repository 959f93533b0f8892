// The torch half of probe-grads: per-layer norms equal a direct autograd computation on
// a tiny model; averaging over batches; checkpoint loading refuses a mismatched file.
#include "catch.h"

#include <cmath>
#include <map>

#include <torch/torch.h>

#include "model/model.h"
#include "probe/measure_torch.h"

#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
using namespace shapelaw::probe;

namespace {

ModelConfig tiny(int depth, int width, const std::string& mlp = "gelu", const std::string& norm = "layernorm") {
  ModelConfig c;
  c.depth = depth;
  c.width = width;
  c.head_dim = 16;
  c.vocab_size = 50;
  c.seq_len = 32;
  c.mlp = mlp;
  c.norm = norm;
  return c;
}

// sqrt(sum ||d loss / d p||^2) over the given parameters, by torch::autograd::grad
double direct_norm(const torch::Tensor& loss, const std::vector<torch::Tensor>& params) {
  auto grads = torch::autograd::grad({loss}, params, {}, /*retain_graph=*/true, /*create_graph=*/false,
                                     /*allow_unused=*/true);
  double sq = 0;
  for (auto& g : grads)
    if (g.defined()) sq += g.to(torch::kFloat64).pow(2).sum().item<double>();
  return std::sqrt(sq);
}

}  // namespace

TEST_CASE("measure: per-layer norms equal a direct autograd computation") {
  for (auto [mlp, norm] : {std::pair<std::string, std::string>{"gelu", "layernorm"}, {"swiglu", "rmsnorm"}}) {
    torch::manual_seed(3);
    Transformer model(tiny(3, 32, mlp, norm));
    auto windows = torch::randint(0, 50, {4, 33}, torch::kLong);
    // two micro-batches of 2 sequences: the gradient of the batch mean, as train accumulates it
    auto rows = batch_grad_norms(*model, {windows.slice(0, 0, 2), windows.slice(0, 2, 4)}, false);

    auto loss = model->loss(windows.slice(1, 0, 32), windows.slice(1, 1, 33));
    std::map<std::pair<int, std::string>, double> got;
    for (auto& r : rows) got[{r.layer, r.component}] = r.norm;
    REQUIRE(got.size() == size_t(1 + 3 * 4 + 2));
    for (int l = 0; l < 3; ++l) {
      auto& b = model->blocks[size_t(l)];
      auto norms = b->norm1->parameters();
      for (auto& p : b->norm2->parameters()) norms.push_back(p);
      INFO("layer " << l << " " << mlp << " " << norm);
      CHECK(got[{l, "attn"}] == Approx(direct_norm(loss, b->attn->parameters())).epsilon(1e-4));
      CHECK(got[{l, "mlp"}] == Approx(direct_norm(loss, b->mlp->parameters())).epsilon(1e-4));
      CHECK(got[{l, "norm"}] == Approx(direct_norm(loss, norms)).epsilon(1e-4));
      CHECK(got[{l, "block"}] == Approx(direct_norm(loss, b->parameters())).epsilon(1e-4));
      CHECK(got[{l, "block"}] > 0);
    }
    CHECK(got[{-1, "embedding"}] == Approx(direct_norm(loss, model->embed->parameters())).epsilon(1e-4));
    CHECK(got[{3, "final_norm"}] == Approx(direct_norm(loss, model->final_norm->parameters())).epsilon(1e-4));
    CHECK(got[{3, "head"}] == Approx(direct_norm(loss, model->head->parameters())).epsilon(1e-4));

    // a second call starts from zeroed gradients: same numbers, not doubled
    auto again = batch_grad_norms(*model, {windows.slice(0, 0, 2), windows.slice(0, 2, 4)}, false);
    for (size_t i = 0; i < rows.size(); ++i) CHECK(again[i].norm == Approx(rows[i].norm).epsilon(1e-6));
  }
}

TEST_CASE("measure: norms are averaged over batches with their spread and ratios to the last layer") {
  std::vector<std::vector<ComponentNorm>> per_batch = {
      {{-1, "embedding", 1.0}, {0, "block", 1.0}, {0, "attn", 0.5}, {1, "block", 4.0}, {1, "attn", 1.0}},
      {{-1, "embedding", 3.0}, {0, "block", 3.0}, {0, "attn", 1.5}, {1, "block", 4.0}, {1, "attn", 3.0}}};
  GradProfile p = average_norms(per_batch, 2);
  REQUIRE(p.rows.size() == 5);
  CHECK(p.rows[1].norm == 2.0);
  CHECK(p.rows[1].norm_sd == Approx(std::sqrt(2.0)));
  CHECK(p.rows[1].ratio == 0.5);
  CHECK(p.rows[2].ratio == 0.5);   // attn 1.0 / attn 2.0
  CHECK(p.rows[0].ratio == 0.5);   // embedding 2.0 / last block 4.0
  CHECK(p.rows[3].norm_sd == 0.0);
  CHECK(p.batches() == 2);
}

TEST_CASE("measure: loading refuses a checkpoint of another shape") {
  test::TempDir tmp;
  torch::manual_seed(1);
  Transformer saved(tiny(2, 32));
  torch::save(saved, tmp.path() + "/model.pt");

  Transformer same(tiny(2, 32));
  load_model_checked(*same, tmp.path() + "/model.pt", torch::kCPU);
  CHECK(torch::equal(same->blocks[1]->mlp->fc->weight, saved->blocks[1]->mlp->fc->weight));

  Transformer deeper(tiny(3, 32));
  CHECK_THROWS_WITH(load_model_checked(*deeper, tmp.path() + "/model.pt", torch::kCPU),
                    Catch::Contains("incompatible checkpoint") && Catch::Contains("block2"));
  Transformer shallower(tiny(1, 32));
  CHECK_THROWS_WITH(load_model_checked(*shallower, tmp.path() + "/model.pt", torch::kCPU),
                    Catch::Contains("unexpected tensor 'block1'"));
  Transformer wider(tiny(2, 64));
  CHECK_THROWS_WITH(load_model_checked(*wider, tmp.path() + "/model.pt", torch::kCPU),
                    Catch::Contains("incompatible checkpoint") && Catch::Contains("shape"));
  Transformer rms(tiny(2, 32, "gelu", "rmsnorm"));
  CHECK_THROWS_WITH(load_model_checked(*rms, tmp.path() + "/model.pt", torch::kCPU),
                    Catch::Contains("unexpected tensor") && Catch::Contains("shift"));
  CHECK_THROWS_WITH(load_model_checked(*same, tmp.path() + "/nothing.pt", torch::kCPU),
                    Catch::Contains("no such file"));
}
