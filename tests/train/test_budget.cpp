// The token budget per configuration (--tokens-per-param): a run's length is the ratio
// times its counted parameters, so it grows with N, follows the chosen count, and is
// recorded in the config (the study's stamp and summary.json carry it).
#include "catch.h"

#include <string>

#include "model/equal_params.h"
#include "train/train_config.h"
#include "util/error.h"

using namespace shapelaw;

namespace {
TrainConfig budgeted(int depth, int width, double tpp, const std::string& count) {
  TrainConfig c;
  c.data = "d";
  c.out = "o";
  c.model.depth = depth;
  c.model.width = width;
  c.model.head_dim = 16;
  c.model.seq_len = 64;
  c.model.vocab_size = 2048;
  c.batch_tokens = 2048;
  c.micro_batch = 32;
  c.tokens_per_param = tpp;
  c.tokens_per_param_count = count;
  return c;
}
}  // namespace

TEST_CASE("budget: tokens = tokens-per-param x the counted parameters, for every count") {
  for (const char* count : {"total", "non-embedding", "12DW2"}) {
    INFO(count);
    for (int depth : {1, 4, 16})
      for (int width : {16, 64}) {
        const TrainConfig c = budgeted(depth, width, 20, count);
        const int64_t n = parameter_count(count_parameters(c.model), count);
        CHECK(c.run_tokens() == 20 * n);
        CHECK(c.total_steps() == (20 * n + 2047) / 2048);
        // proportional to the ratio
        CHECK(budgeted(depth, width, 40, count).run_tokens() == 2 * c.run_tokens());
      }
  }
  // the counts differ (the embedding is most of a shallow micro model): the switch matters
  CHECK(budgeted(1, 16, 20, "total").run_tokens() > 10 * budgeted(1, 16, 20, "non-embedding").run_tokens());
  CHECK(budgeted(4, 64, 20, "12DW2").run_tokens() == 20 * 12 * 4 * 64 * 64);
  // deeper and wider get more tokens
  CHECK(budgeted(16, 64, 20, "total").run_tokens() > budgeted(8, 64, 20, "total").run_tokens());
  CHECK(budgeted(8, 64, 20, "total").run_tokens() > budgeted(8, 32, 20, "total").run_tokens());
  // without a budget, --tokens is the length as before
  TrainConfig plain = budgeted(2, 16, 0, "total");
  plain.tokens = 4096;
  CHECK(plain.run_tokens() == 4096);
  CHECK(plain.total_steps() == 2);
}

TEST_CASE("budget: recorded in the config JSON (stamp, summary, resume check), and bad values refused clearly") {
  const TrainConfig c = budgeted(2, 16, 20, "non-embedding");
  const auto j = to_json(c);
  CHECK(j.at("tokens_per_param") == 20.0);
  CHECK(j.at("tokens_per_param_count") == "non-embedding");
  const TrainConfig back = train_config_from_json(j);
  CHECK(back.run_tokens() == c.run_tokens());
  // another ratio or count is another run: the binding config differs
  CHECK(binding_config(c) != binding_config(budgeted(2, 16, 10, "non-embedding")));
  CHECK(binding_config(c) != binding_config(budgeted(2, 16, 20, "total")));
  c.validate();

  TrainConfig both = c;
  both.tokens = 1000;
  CHECK_THROWS_WITH(both.validate(), Catch::Contains("--tokens-per-param sets the run length"));
  TrainConfig steps_and_tokens = c;  // the two older lengths together were not refused: --tokens was ignored
  steps_and_tokens.tokens_per_param = 0;
  steps_and_tokens.steps = 3;
  steps_and_tokens.tokens = 50000;
  CHECK_THROWS_WITH(steps_and_tokens.validate(), Catch::Contains("--steps and --tokens both set the run length"));
  TrainConfig bad = c;
  bad.tokens_per_param_count = "embedding";
  CHECK_THROWS_WITH(bad.validate(), Catch::Contains("--tokens-per-param-count must be total, non-embedding or 12DW2"));
  TrainConfig negative = c;
  negative.tokens_per_param = -1;
  CHECK_THROWS_WITH(negative.validate(), Catch::Contains("--tokens-per-param must be >= 0"));
  // the total count needs the vocabulary (the trainer takes it from the data first)
  TrainConfig no_vocab = budgeted(2, 16, 20, "total");
  no_vocab.model.vocab_size = 0;
  no_vocab.validate();  // the length is checked once the data gave the vocabulary
  CHECK_THROWS_WITH(no_vocab.run_tokens(), Catch::Contains("needs the vocabulary size"));
}
