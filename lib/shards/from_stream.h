#pragma once
// `shard`: a token stream (from `tokenize encode`) into a shard directory.
#include <string>

#include <nlohmann/json.hpp>

#include "shards/writer.h"

namespace shapelaw {

// Reads the stream at input ("-" = stdin) and writes shards + manifest under
// directory. When tokenizer_model is non-empty, its SHA-256 must equal the one the
// stream records. Every document of test_input (a second stream from the same
// tokenizer; empty = none) goes to the test split, beside the hashed split of input's.
// Returns the manifest.
nlohmann::json shards_from_stream(const std::string& input, const std::string& directory,
                                  const ShardOptions& options, const std::string& tokenizer_model, bool quiet,
                                  const std::string& test_input = "");

}  // namespace shapelaw
