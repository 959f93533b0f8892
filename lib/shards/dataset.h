#pragma once
// Read side of the shard format (docs/formats.md, "Token shards"): what the trainer
// and probes use. Opens a manifest, reads token windows at any offset of a split
// without decompressing whole shards, and samples windows deterministically.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shards/writer.h"

namespace shapelaw {

class ShardFile;  // one .shard file, random access by frame (shards/shard_file.h)

// One split ("train", "validation", "test") = the concatenation of its shards.
// Thread-safe: read() may be called from several threads at once.
class TokenSplit {
 public:
  TokenSplit(std::string name, std::vector<std::shared_ptr<ShardFile>> shards);
  const std::string& name() const { return name_; }
  uint64_t num_tokens() const { return total_tokens_; }
  uint64_t num_documents() const { return total_documents_; }
  // Copies tokens [offset, offset+count) into out; throws Error past the end or on a
  // checksum failure (naming the shard file and byte offset).
  void read(uint64_t offset, size_t count, uint32_t* out) const;
  std::vector<uint32_t> read(uint64_t offset, size_t count) const;
  // Token offset one past the end of document i (its EOS included), in split order.
  uint64_t document_end(uint64_t i) const;

 private:
  std::string name_;
  std::vector<std::shared_ptr<ShardFile>> shards_;
  std::vector<uint64_t> shard_starts_;      // first token of each shard in the split
  std::vector<uint64_t> shard_doc_starts_;  // first document of each shard
  uint64_t total_tokens_ = 0, total_documents_ = 0;
};

// manifest.json's record kind, checked on reading by records::check_versioned.
inline constexpr const char* kManifestFormat = "shapelaw.shards";
inline constexpr int kManifestVersion = 1;

// A shard directory: manifest.json plus the shard files it lists.
class TokenDataset {
 public:
  // path: the manifest.json or the directory holding it. Checks every shard's header
  // against the manifest (not the full checksums: that is `shard verify`).
  static TokenDataset open(const std::string& path);
  const nlohmann::json& manifest() const { return manifest_; }
  const std::string& directory() const { return directory_; }
  std::string manifest_sha256() const { return manifest_sha256_; }
  std::string tokenizer_sha256() const;
  int token_width() const;  // bytes per stored token (2 or 4), checked when opened  // recorded hash of the tokenizer (tokenizer/tokenizer.h)
  TokenizerInfo tokenizer() const;       // everything the manifest records of it
  uint32_t vocab_size() const;
  uint32_t eos_id() const;
  bool has_split(const std::string& name) const;
  const TokenSplit& split(const std::string& name) const;  // throws Error if absent
  // Throws Error unless the tokenizer's SHA-256 (a model file or a GPT-2 directory)
  // equals the recorded one.
  void check_tokenizer(const std::string& model_path) const;

 private:
  std::string directory_, manifest_sha256_;
  nlohmann::json manifest_;
  std::vector<std::shared_ptr<TokenSplit>> splits_;
};

// Deterministic sampler of fixed-length windows (window = seq_len + 1 tokens, so
// inputs and next-token targets come from one read). Window starts are a seeded
// permutation of non-overlapping windows, reshuffled per epoch; data-parallel rank r
// of R takes every R-th window, so ranks read disjoint data. The cursor (epoch,
// index) is all the state a checkpoint needs to resume the exact sequence.
class WindowSampler {
 public:
  WindowSampler(const TokenSplit& split, size_t window, uint64_t seed, int rank = 0, int world = 1);
  struct Cursor { uint64_t epoch = 0, index = 0; };
  size_t window() const { return window_; }
  uint64_t windows_per_epoch() const { return windows_per_rank_; }  // for this rank
  // Start offset of the window at the cursor; advances the cursor.
  uint64_t next_offset(Cursor& cursor) const;
  // Fills out (window tokens) with the next window; advances the cursor.
  void next(Cursor& cursor, uint32_t* out) const;

 private:
  uint64_t permuted(uint64_t epoch, uint64_t i) const;
  const TokenSplit& split_;
  size_t window_;
  uint64_t seed_, total_windows_, windows_per_rank_;
  int rank_, world_;
};

}  // namespace shapelaw
