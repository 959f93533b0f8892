#pragma once
// GPT-2's pre-tokenization: text cut into the pieces that BPE then merges within,
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// with the meaning that pattern has in the reference encoder (a JavaScript regular
// expression with the u flag, gpt-3-encoder's Encoder.js), not PCRE's or Python's.
#include <memory>
#include <string_view>
#include <vector>

namespace shapelaw {

class Gpt2Pretokenizer {
 public:
  Gpt2Pretokenizer();  // compiles the pattern (JIT where the platform has it)
  ~Gpt2Pretokenizer();
  Gpt2Pretokenizer(const Gpt2Pretokenizer&) = delete;
  Gpt2Pretokenizer& operator=(const Gpt2Pretokenizer&) = delete;

  // Per-thread match state: the compiled pattern is shared, this is not.
  class Matcher {
   public:
    explicit Matcher(const Gpt2Pretokenizer& pretokenizer);
    ~Matcher();
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;
    // The pieces of `text` (well-formed UTF-8: see util/utf8.h), in order; they
    // cover the text exactly.
    void split(std::string_view text, std::vector<std::string_view>& pieces);

   private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
  };

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shapelaw
