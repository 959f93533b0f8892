#pragma once
// Write side of the shard format (docs/formats.md, "Token shards"): turns a stream of
// documents into per-split shard files plus manifest.json, all written atomically.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shapelaw {

struct ShardOptions {
  uint64_t shard_tokens = 64ull << 20;  // tokens per shard file
  uint32_t frame_tokens = 16384;        // tokens per independent zstd frame
  int zstd_level = 3;
  uint64_t split_seed = 42;
  double validation_fraction = 0.005;   // of documents, by seeded hash
  double test_fraction = 0.0;
};

// Where the tokens came from, recorded in the manifest.
struct TokenizerInfo {
  uint32_t vocab_size = 0;
  uint32_t eos_id = 0;
  std::string model_sha256;          // sentencepiece: of the .model file; gpt2: of encoder.json + vocab.bpe
  std::string sentencepiece_version; // empty for gpt2
  std::string kind = "sentencepiece";  // or "gpt2" (lib/tokenizer/tokenizer.h)
};

class ShardSetWriter {
 public:
  ShardSetWriter(std::string directory, TokenizerInfo tokenizer, ShardOptions options);
  ~ShardSetWriter();
  // One document's tokens, without the EOS (the writer appends it).
  void add_document(const uint32_t* tokens, size_t count);
  void add_document(const std::vector<uint32_t>& tokens) { add_document(tokens.data(), tokens.size()); }
  // A document that goes to `split` whatever its hash (a corpus's own held-out part).
  void add_document_to(const std::string& split, const uint32_t* tokens, size_t count);
  // Flushes the open shards and writes manifest.json last: a directory without a
  // manifest is an unfinished run. Returns the manifest.
  nlohmann::json finish(const nlohmann::json& extra_provenance = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Which split a document goes to: a seeded hash of its tokens, so the assignment does
// not depend on document order or on how the input was chunked.
std::string split_of_document(const uint32_t* tokens, size_t count, const ShardOptions& options);

}  // namespace shapelaw
