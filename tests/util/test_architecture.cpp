// The house's arrows: a lib/<concept>/ file includes headers of other concepts only
// when that concept sits below it, so the concept graph of #include "concept/..." lines
// has no cycle (docs/architecture.md). The shards library once included the tokenizer
// above it for `shard cat --format text`; the tool composes that now.
#include "catch.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "test_support.h"

namespace fs = std::filesystem;

namespace {

// concept -> the other concepts its files include, each with one file that does
std::map<std::string, std::map<std::string, std::string>> include_graph() {
  std::map<std::string, std::map<std::string, std::string>> graph;
  const std::regex include(R"re(^\s*#\s*include\s+"([a-z_]+)/)re");
  for (const auto& dir : fs::directory_iterator(shapelaw::test::source("lib"))) {
    if (!dir.is_directory()) continue;
    const std::string concept_name = dir.path().filename().string();
    graph[concept_name];
    for (const auto& file : fs::directory_iterator(dir.path())) {
      std::ifstream in(file.path());
      std::string line;
      std::smatch m;
      while (std::getline(in, line))
        if (std::regex_search(line, m, include) && m[1] != concept_name && fs::is_directory(dir.path().parent_path() / m[1].str()))
          graph[concept_name].emplace(m[1], file.path().filename().string());
    }
  }
  return graph;
}

}  // namespace

TEST_CASE("lib/'s concepts include each other without a cycle: every arrow points down") {
  const auto graph = include_graph();
  REQUIRE(graph.size() >= 10);
  // depth-first search; a grey node met again closes a cycle, reported as its path
  std::map<std::string, int> colour;  // 0 unvisited, 1 on the path, 2 done
  std::vector<std::string> path;
  std::string cycle;
  std::function<void(const std::string&)> visit = [&](const std::string& node) {
    colour[node] = 1;
    path.push_back(node);
    for (const auto& [next, file] : graph.at(node)) {
      if (!cycle.empty()) break;
      if (colour[next] == 1) {
        for (const auto& p : path) cycle += p + " -> ";
        cycle += next + " (" + node + "/" + file + ")";
      } else if (colour[next] == 0 && graph.count(next)) {
        visit(next);
      }
    }
    path.pop_back();
    colour[node] = 2;
  };
  for (const auto& [node, edges] : graph)
    if (colour[node] == 0) visit(node);
  INFO("include cycle: " << cycle);
  CHECK(cycle.empty());
  // the arrow this test was written for
  CHECK(graph.at("shards").count("tokenizer") == 0);
  CHECK(graph.at("tokenizer").count("shards") == 1);
}

// catch_discover_tests hands each case's name to CMake as a list element: on Debian 12
// (CMake 3.25, Catch2 2.13) a ';' in a name splits it into two CTest entries whose filters
// match no case, and Catch2 v2 passes a filter that matches nothing. Six cases never ran
// there that way, and CTest counted them as passed.
TEST_CASE("no test case name holds a semicolon, which would turn it into CTest entries that run nothing") {
  const std::regex test_case(R"re(TEST_CASE\s*\(\s*"([^"]*)")re");
  const fs::path root = fs::path(shapelaw::test::source("tests")).parent_path();
  std::string offenders;
  size_t cases = 0;
  for (const auto& entry : fs::recursive_directory_iterator(shapelaw::test::source("tests"))) {
    const auto ext = entry.path().extension();
    if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h")) continue;
    std::ifstream in(entry.path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      std::smatch m;
      if (!std::regex_search(line, m, test_case)) continue;
      ++cases;
      if (m[1].str().find(';') != std::string::npos)
        offenders += fs::relative(entry.path(), root).string() + ":" + std::to_string(number) + ": " + m[1].str() + "\n";
    }
  }
  CHECK(cases >= 300);  // the scan sees the suite
  INFO("test cases whose name holds a ';':\n" << offenders);
  CHECK(offenders.empty());
}

// The other half of that rule, for any other way a filter can go wrong: tests/test_main.cpp
// makes Catch2 v2 fail a run that matched no case, as v3 does on its own.
TEST_CASE("a test binary given a filter that matches no case fails instead of passing") {
  const std::string self = shapelaw::test::this_test_binary();
  const auto none = shapelaw::test::run(self + " 'no case has this name' 2>&1");
  INFO(none.output);
  CHECK(none.exit_code != 0);
  const auto one = shapelaw::test::run(self + " '*every arrow points down' 2>&1");
  INFO(one.output);
  CHECK(one.exit_code == 0);
}

