#pragma once
// `tokenize encode`: documents in, token stream out (shards/token_stream.h). One
// reader thread batches documents, N workers encode batches with one shared tokenizer
// (sentencepiece or GPT-2, tokenizer.h; each worker its own cache), and batches are
// written in input order, so the output is byte-identical for any thread count.
#include <cstdint>
#include <string>
#include <vector>

#include "corpus/documents.h"
#include "shards/writer.h"

namespace shapelaw {

struct EncodeOptions {
  int threads = 0;                 // encoding workers; 0 = all cores
  size_t batch_bytes = 1 << 20;    // text per batch (also per stream block)
  bool quiet = false;
  DocumentReaderOptions reader;
};

struct EncodeResult {
  uint64_t documents = 0, tokens = 0, text_bytes = 0, skipped = 0;
  double seconds = 0;
};

// Loads a tokenizer (a sentencepiece model or a GPT-2 directory) and describes it as the
// shards will record it.
TokenizerInfo describe_tokenizer(const std::string& model_path);

EncodeResult encode_documents(const std::string& model_path, const std::vector<std::string>& inputs,
                              const std::string& output_path, const EncodeOptions& options);

}  // namespace shapelaw
