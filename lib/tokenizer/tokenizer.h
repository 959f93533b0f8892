#pragma once
// The tokenizer a path names, whichever kind it is: a sentencepiece .model file or a
// directory of GPT-2's encoder.json and vocab.bpe. Encode, decode and every check of a
// recorded tokenizer go through here, so they agree on what names it (kind, SHA-256).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shards/tokenizer_id.h"
#include "shards/writer.h"

namespace shapelaw {

// Encoding state of one thread (caches): output never depends on which session encodes.
class TokenizerSession {
 public:
  virtual ~TokenizerSession() = default;
  // Appends the ids of one document's text (no EOS).
  virtual void encode(std::string_view text, std::vector<uint32_t>& ids) = 0;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  const TokenizerInfo& info() const { return info_; }
  const std::string& path() const { return path_; }
  virtual std::unique_ptr<TokenizerSession> session() const = 0;
  // One document's text from its ids (no EOS); throws Error for an id outside the
  // vocabulary. gpt2 gives the bytes back exactly; sentencepiece its normalized text.
  virtual void decode(const std::vector<uint32_t>& ids, std::string& text) const = 0;

 protected:
  TokenizerInfo info_;
  std::string path_;
};

// A directory with encoder.json: GPT-2's; a file: a sentencepiece model. Throws Error
// naming the path otherwise.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// Throws Error unless `tokenizer` is the one `recorded` describes (kind and SHA-256);
// `source` names where the record came from.
void check_same_tokenizer(const Tokenizer& tokenizer, const TokenizerInfo& recorded, const std::string& source);

}  // namespace shapelaw
