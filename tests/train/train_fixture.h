#pragma once
// What the train tests share: a tiny learnable shard set (made once per executable), the
// flags of a tiny model that trains in a fraction of a second, and metrics.jsonl readers.
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "learnable_shards.h"
#include "test_support.h"

namespace shapelaw::test {

using json = nlohmann::json;

inline const std::string& dataset() {
  static TempDir dir;
  static std::string path = write_learnable_shards(dir.path() + "/shards");
  return path;
}

inline std::string base_args(const std::string& out) {
  return bin("train") + " --data " + dataset() + " --out " + out +
         " --depth 2 --width 32 --head-dim 16 --seq-len 32 --micro-batch 2 --batch-tokens 128"
         " --warmup-steps 2 --lr 3e-3 --min-lr 3e-4 --threads 1 --peak-flops 1e10 --val-tokens 1024"
         " --log-every 0";
}

inline std::vector<json> read_jsonl(const std::string& path) {
  std::vector<json> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) lines.push_back(json::parse(line));
  return lines;
}

inline std::vector<double> train_losses(const std::string& out) {
  std::vector<double> losses;
  for (auto& j : read_jsonl(out + "/metrics.jsonl"))
    if (j["kind"] == "train") losses.push_back(j["loss"].get<double>());
  return losses;
}

}  // namespace shapelaw::test
