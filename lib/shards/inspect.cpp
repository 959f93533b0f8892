#include "shards/inspect.h"

#include <cstdio>

#include "shards/dataset.h"
#include "shards/shard_file.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace shapelaw {

nlohmann::json inspect_shards(const std::string& directory) {
  TokenDataset dataset = TokenDataset::open(directory);
  const auto& m = dataset.manifest();
  const int width = dataset.token_width();
  nlohmann::json out = {{"directory", dataset.directory()},
                        {"manifest_sha256", dataset.manifest_sha256()},
                        {"tokenizer", m.at("tokenizer")},
                        {"token_width", width},
                        {"frame_tokens", m.at("frame_tokens")}};
  uint64_t all_tokens = 0, all_bytes = 0;
  for (const auto& [name, split] : m.at("splits").items()) {
    uint64_t bytes = 0;
    for (const auto& shard : split.at("shards")) bytes += shard.at("bytes").get<uint64_t>();
    uint64_t tokens = split.at("tokens").get<uint64_t>();
    out["splits"][name] = {{"tokens", tokens}, {"documents", split.at("documents")},
                           {"shards", split.at("shards").size()}, {"bytes", bytes},
                           {"bytes_per_token", tokens ? double(bytes) / double(tokens) : 0.0}};
    all_tokens += tokens;
    all_bytes += bytes;
  }
  out["tokens"] = all_tokens;
  out["bytes"] = all_bytes;
  out["raw_bytes"] = all_tokens * width;
  out["compression_ratio"] = all_bytes ? double(all_tokens * width) / double(all_bytes) : 0.0;
  return out;
}

std::string format_inspection(const nlohmann::json& x) {
  std::string text;
  char line[256];
  std::snprintf(line, sizeof line, "shards:      %s\nmanifest:    sha256 %s\n", x.at("directory").get<std::string>().c_str(),
                x.at("manifest_sha256").get<std::string>().c_str());
  text += line;
  const auto& t = x.at("tokenizer");
  const std::string kind = t.value("kind", "sentencepiece");
  const std::string version = kind == "sentencepiece" ? ", sentencepiece " + t.value("sentencepiece_version", "") : "";
  std::snprintf(line, sizeof line, "tokenizer:   %s, vocab %u, eos %u, sha256 %s%s\n", kind.c_str(),
                t.at("vocab_size").get<unsigned>(), t.at("eos_id").get<unsigned>(),
                t.at("model_sha256").get<std::string>().c_str(), version.c_str());
  text += line;
  std::snprintf(line, sizeof line, "format:      uint%d tokens, %u tokens per zstd frame\n",
                8 * x.at("token_width").get<int>(), x.at("frame_tokens").get<unsigned>());
  text += line;
  text += "split        shards        tokens   documents         bytes  bytes/token\n";
  for (const auto& [name, s] : x.at("splits").items()) {
    std::snprintf(line, sizeof line, "%-10s %8zu %13llu %11llu %13llu  %.3f\n", name.c_str(),
                  s.at("shards").get<size_t>(), s.at("tokens").get<unsigned long long>(),
                  s.at("documents").get<unsigned long long>(), s.at("bytes").get<unsigned long long>(),
                  s.at("bytes_per_token").get<double>());
    text += line;
  }
  std::snprintf(line, sizeof line, "compression: %.3fx against raw uint%d (%llu -> %llu bytes)\n",
                x.at("compression_ratio").get<double>(), 8 * x.at("token_width").get<int>(),
                x.at("raw_bytes").get<unsigned long long>(), x.at("bytes").get<unsigned long long>());
  text += line;
  return text;
}

VerifyResult verify_shards(const std::string& directory, bool quiet) {
  TokenDataset dataset = TokenDataset::open(directory);
  VerifyResult result;
  Progress progress("shard verify", quiet);
  const std::string manifest_path = dataset.directory() + "/manifest.json";
  for (const auto& [name, split] : dataset.manifest().at("splits").items()) {
    uint64_t split_tokens = 0, split_documents = 0;
    for (const auto& entry : split.at("shards")) {
      std::string path = dataset.directory() + "/" + entry.at("file").get<std::string>();
      std::string actual = sha256_file_hex(path);
      ShardFile shard(path);  // header, trailer and index CRCs
      shard.verify();         // every frame, naming the byte offset of a bad one
      if (actual != entry.at("sha256").get<std::string>())
        throw Error(located(path, 0, "SHA-256 differs from the manifest (file replaced after writing?)"));
      uint32_t eos = shard.header().eos_id, token = 0;
      for (uint64_t d = 0; d < shard.num_documents(); ++d) {
        uint64_t end = shard.document_end(d);
        shard.read(end - 1, 1, &token);
        if (token != eos)
          throw Error(located(path, 0, "document " + std::to_string(d) + " does not end with EOS at token " +
                                           std::to_string(end - 1)));
      }
      // the manifest's counts against the shard's own trailer
      auto counted = [&](const char* key, uint64_t actual_value) {
        if (!entry.contains(key) || !entry.at(key).is_number_unsigned() || entry.at(key).get<uint64_t>() != actual_value)
          throw Error(located(manifest_path, 0, "splits." + name + ": " + entry.at("file").get<std::string>() + ": '" +
                                                    key + "' is " + (entry.contains(key) ? entry.at(key).dump() : "missing") +
                                                    ", the shard has " + std::to_string(actual_value)));
      };
      counted("tokens", shard.num_tokens());
      counted("documents", shard.num_documents());
      counted("bytes", shard.file_size());
      split_tokens += shard.num_tokens();
      split_documents += shard.num_documents();
      ++result.shards;
      result.tokens += shard.num_tokens();
      result.bytes += shard.file_size();
      progress.update(result.bytes, 0, result.shards, "shards");
    }
    for (auto [key, total] : {std::pair<const char*, uint64_t>{"tokens", split_tokens}, {"documents", split_documents}})
      if (!split.contains(key) || !split.at(key).is_number_unsigned() || split.at(key).get<uint64_t>() != total)
        throw Error(located(manifest_path, 0, "splits." + name + "." + key + " is " +
                                                  (split.contains(key) ? split.at(key).dump() : "missing") +
                                                  ", its shards hold " + std::to_string(total)));
  }
  progress.finish(result.bytes, result.shards, "shards");
  return result;
}

}  // namespace shapelaw
