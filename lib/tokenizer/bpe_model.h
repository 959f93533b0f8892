#pragma once
// Training a sentencepiece BPE model from JSON-lines documents without holding the
// corpus in memory: a seeded reservoir sample of lines feeds the trainer.
#include <cstdint>
#include <string>
#include <vector>

#include "corpus/documents.h"

namespace shapelaw {

struct BpeTrainingOptions {
  int vocab_size = 50257;          // the paper's GPT-2 vocabulary size
  double character_coverage = 0.9995;
  bool byte_fallback = true;
  uint64_t sample_lines = 2'000'000;  // reservoir size (lines of text)
  uint64_t seed = 42;
  int threads = 0;                  // 0 = all cores
  int max_sentence_length = 16384;  // bytes; longer lines are cut
  std::string normalization = "nmt_nfkc";  // sentencepiece normalization rule (its default)
  bool quiet = false;
  DocumentReaderOptions reader;
};

struct BpeTrainingResult {
  uint64_t documents = 0, lines_seen = 0, lines_sampled = 0, skipped = 0;
  std::string model_sha256;
};

// Trains and writes the serialized model to <model_path> (atomically).
BpeTrainingResult train_bpe_model(const std::vector<std::string>& inputs, const std::string& model_path,
                                  const BpeTrainingOptions& options);

// The sentencepiece library version the tools are built against.
std::string sentencepiece_version();

}  // namespace shapelaw
