#pragma once
// A sentencepiece model file loaded once, with the description of it that token
// streams and shard manifests record (so encode, decode and the checks agree).
#include <memory>
#include <string>

#include <sentencepiece_processor.h>

#include "shards/writer.h"

namespace shapelaw {

struct SentencePieceModel {
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor;
  TokenizerInfo info;
  std::string path;
};

// Throws Error naming the file when it is not a sentencepiece model or has no EOS piece.
SentencePieceModel load_sentencepiece_model(const std::string& path);

// Throws Error unless `model` is the tokenizer that `recorded` describes (SHA-256 of
// the model file); `source` names where the record came from.
void check_same_tokenizer(const SentencePieceModel& model, const TokenizerInfo& recorded, const std::string& source);

}  // namespace shapelaw
