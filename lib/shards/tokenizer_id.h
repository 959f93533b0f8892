#pragma once
// How records name a tokenizer (TokenizerInfo's kind and SHA-256) from the path a user
// gives (`--tokenizer`, `--tokenizer-model`): here, below lib/tokenizer/, so the shard
// readers check such a path without loading a tokenizer.
#include <string>

#include "shards/writer.h"

namespace shapelaw {

// Whether `path` is a directory holding encoder.json (GPT-2's tokenizer).
bool is_gpt2_tokenizer_directory(const std::string& path);

// sentencepiece: the SHA-256 of the model file; gpt2: of encoder.json followed by
// vocab.bpe (`cat encoder.json vocab.bpe | sha256sum`). Throws Error naming the file.
std::string tokenizer_sha256(const std::string& path);

// "gpt2 (sha256 00f404d36600…)": how messages name a recorded tokenizer.
std::string describe(const TokenizerInfo& info);

}  // namespace shapelaw
