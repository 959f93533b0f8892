#pragma once
// `shard cat`: documents of one split streamed back out of a shard directory, in
// order, to a sink the caller chooses. The token formats (stream, raw16, raw32) are a
// sink of this library; decoding to text belongs to the tokenizer above it, so the
// tool composes that sink (tools/shard.cpp) and every dependency points down.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shards/token_io.h"

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
};

// Where the documents go: one call of write per document (its tokens without the EOS;
// each format marks document ends its own way), then close.
struct DocumentSink {
  std::function<void(const std::vector<uint32_t>& tokens)> write;
  std::function<void()> close;
};

// The sink is made once the manifest is read and the range checked, from the
// tokenizer the manifest records (`manifest` names that file, for messages), so a
// caller can check its own model against it before anything is written.
using DocumentSinkFactory = std::function<DocumentSink(const TokenizerInfo& recorded, const std::string& manifest)>;

struct CatResult {
  uint64_t documents = 0, tokens = 0;  // tokens without EOS
};

CatResult cat_shards(const std::string& directory, const CatOptions& options, const DocumentSinkFactory& make_sink);

// A sink writing token ids as `format` (token_io.h) to output ("-" = stdout).
DocumentSink token_document_sink(const std::string& output, TokenFormat format, const TokenizerInfo& tokenizer);

}  // namespace shapelaw
