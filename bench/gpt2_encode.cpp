// GPT-2 encoding proper, on one core: the documents of a JSON-lines file parsed into
// memory first, then encoded by one session (a fresh cache each pass), so the number
// excludes reading, JSON parsing and writing, which `tokenize encode` overlaps on other
// threads. Prints MB/s per pass, and the JSON parse rate and vocabulary load time.
// Usage: bench_gpt2_encode GPT2_DIR CORPUS.jsonl [PASSES=2]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/gpt2_bpe.h"
#include "util/tool_main.h"

using namespace shapelaw;
using Clock = std::chrono::steady_clock;

static double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_gpt2_encode GPT2_DIR CORPUS.jsonl [PASSES=2]\n");
    return 2;
  }
  return tool_main("bench_gpt2_encode", [&] {
    const int passes = argc > 3 ? std::stoi(argv[3]) : 2;
    std::ifstream in(argv[2]);
    std::vector<std::string> lines, docs;
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(line);
    const auto t0 = Clock::now();
    size_t bytes = 0;
    for (const auto& l : lines) {
      docs.push_back(nlohmann::json::parse(l).at("text").get<std::string>());
      bytes += docs.back().size();
    }
    const auto t1 = Clock::now();
    const Gpt2Bpe bpe(argv[1]);
    const auto t2 = Clock::now();
    std::printf("%.2f MB of text, %zu documents; JSON parse %.0f MB/s; vocabulary load %.3f s\n", bytes / 1e6,
                docs.size(), bytes / 1e6 / seconds(t0, t1), seconds(t1, t2));
    for (int pass = 0; pass < passes; ++pass) {
      Gpt2Bpe::Session session(bpe);
      std::vector<uint32_t> ids;
      size_t tokens = 0;
      const auto a = Clock::now();
      for (const auto& d : docs) {
        ids.clear();
        session.encode(d, ids);
        tokens += ids.size();
      }
      const auto b = Clock::now();
      std::printf("pass %d: encode %.1f MB/s (%zu tokens, fresh cache)\n", pass + 1, bytes / 1e6 / seconds(a, b), tokens);
    }
    return 0;
  });
}
