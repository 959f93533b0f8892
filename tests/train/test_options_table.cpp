// The option table is the one list: the records' non-binding keys, the sweepable flags the
// study grids accept and the lists in README.md and docs/formats.md all equal what it says.
#include "catch.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "records/run_summary.h"
#include "test_support.h"
#include "train/train_config.h"

using namespace shapelaw;

namespace {
std::set<std::string> sweepable_flags() {
  std::set<std::string> s;
  for (const auto& row : options_table_json())
    if (row.at("sweepable").get<bool>()) s.insert(row.at("flag").get<std::string>().substr(2));
  return s;
}
// The words of the first "sweepable: `...`" span after `anchor` in a document.
std::set<std::string> listed_in(const std::string& path, const std::string& anchor) {
  const std::string text = test::read_text(test::source(path));
  auto a = text.find(anchor);
  REQUIRE(a != std::string::npos);
  auto start = text.find("sweepable: `", a);
  REQUIRE(start != std::string::npos);
  start += 12;
  const auto end = text.find('`', start);
  std::istringstream words(text.substr(start, end - start));
  std::set<std::string> s;
  for (std::string w; words >> w;) s.insert(w);
  return s;
}
}  // namespace

TEST_CASE("the records' non-binding keys are the option table's runtime rows") {
  std::set<std::string> table;
  for (const auto& row : options_table_json())
    if (!row.at("binding").get<bool>()) table.insert(row.at("key").get<std::string>());
  const auto& keys = records::non_binding_config_keys();
  CHECK(std::set<std::string>(keys.begin(), keys.end()) == table);
  CHECK(table.count("bucket_mb") == 1);
  CHECK(table.count("lr") == 0);
}

TEST_CASE("the sweepable flags: the table's, in train --options-json, README.md and docs/formats.md") {
  const auto flags = sweepable_flags();
  CHECK(flags == std::set<std::string>{"lr", "min-lr", "warmup-fraction", "warmup-steps", "weight-decay", "beta1",
                                       "beta2", "eps", "grad-clip", "batch-tokens", "tokens-per-param", "tokens-per-param-count", "init-std"});
  CHECK(listed_in("README.md", "A row may sweep a flag") == flags);
  CHECK(listed_in("docs/formats.md", "Expansion, in this order") == flags);
  auto r = test::run(test::bin("train") + " --options-json");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto rows = nlohmann::json::parse(r.output);
  std::set<std::string> from_cli;
  for (const auto& row : rows)
    if (row.at("sweepable").get<bool>()) from_cli.insert(row.at("flag").get<std::string>().substr(2));
  CHECK(from_cli == flags);
  const auto lr = std::find_if(rows.begin(), rows.end(), [](const auto& row) { return row.at("key") == "lr"; });
  REQUIRE(lr != rows.end());
  CHECK((*lr).at("default") == 3e-4);
  CHECK((*lr).at("group") == "train");
}

TEST_CASE("a warmup given in steps is not capped unless the cap is given too, from the CLI and from JSON alike") {
  TrainConfig c = train_config_from_json({{"warmup_steps", 100}});
  CHECK(c.warmup_cap == 0);
  c = train_config_from_json({{"warmup_steps", 100}, {"warmup_cap", 0.2}});
  CHECK(c.warmup_cap == 0.2);
  c = TrainConfig{};
  uncap_explicit_warmup(c, false, false);
  CHECK(c.warmup_cap == 0.1);
  uncap_explicit_warmup(c, true, false);
  CHECK(c.warmup_cap == 0);
}

TEST_CASE("train --options-json gives the defaults train --help shows and a command line starts from") {
  // the table's vocab_size said 50257 while the command line's is 0 (from the manifest)
  auto help = test::run(test::bin("train") + " --help");
  INFO(help.output);
  REQUIRE(help.exit_code == 0);
  int compared = 0;
  for (const auto& row : options_table_json()) {
    const std::string flag = row.at("flag");
    const auto& def = row.at("default");
    if (flag.empty() || !(def.is_number() || def.is_string())) continue;
    const auto at = help.output.find("  " + flag + " ");
    if (at == std::string::npos) continue;
    // the default after the flag's type: "--lr FLOAT=0.0003" (CLI11 1.9, Debian 12) or
    // "--lr FLOAT [0.0003]" (CLI11 2.x, Debian 13); none for no_default rows
    static const std::regex shown_default(R"(^ \S+(?:=(\S+)| \[([^\]]*)\]))");
    const auto line_end = help.output.find('\n', at);
    const std::string after = help.output.substr(at + 2 + flag.size(), line_end - at - 2 - flag.size());
    std::smatch m;
    if (!std::regex_search(after, m, shown_default)) continue;
    const std::string shown = m[1].matched ? m[1].str() : m[2].str();
    INFO(flag << ": --help shows " << shown << ", --options-json " << def.dump());
    if (def.is_number())
      CHECK(std::stod(shown) == Approx(def.get<double>()));
    else
      CHECK(shown == def.get<std::string>());
    ++compared;
  }
  CHECK(compared >= 30);
  for (const auto& row : options_table_json())
    if (row.at("key") == "vocab_size") CHECK(row.at("default") == 0);
}

TEST_CASE("train eval elsewhere on the line than first is refused, saying where it goes") {
  auto r = test::run(test::bin("train") + " --data x eval run 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("`eval` must come first: train eval RUN"));
  auto help = test::run(test::bin("train") + " --help");
  CHECK_THAT(help.output, Catch::Contains("  eval ") && Catch::Contains("first on the line"));  // listed among the subcommands
}
