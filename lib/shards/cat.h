#pragma once
// `shard cat`: documents of one split back out of a shard directory, as a token
// stream (for `tokenize decode` or `shard write`), raw ids or decoded text.
#include <cstdint>
#include <optional>
#include <string>

namespace shapelaw {

// Documents [begin, end) of a split; end absent = to the last document.
struct DocumentRange {
  uint64_t begin = 0;
  std::optional<uint64_t> end;
};
// "a:b", "a:", ":b" or ":" (half-open, counted from 0); throws Error otherwise.
DocumentRange parse_document_range(const std::string& text);

struct CatOptions {
  std::string split = "train";
  DocumentRange range;
  std::string format = "stream";  // stream, raw16, raw32 or text
  std::string tokenizer_model;    // required for text; checked against the manifest when given
};

struct CatResult {
  uint64_t documents = 0, tokens = 0;  // tokens without EOS
};

// Writes to output ("-" = stdout).
CatResult cat_shards(const std::string& directory, const CatOptions& options, const std::string& output);

}  // namespace shapelaw
