#pragma once
// Token ids back into text: `tokenize decode` and `shard cat --format text`. One
// document in, its decoding out (sentencepiece's normalized text, or GPT-2's bytes
// exactly), either as a line of text or as a corpus JSON line (docs/formats.md,
// "Corpus layout"), which `tokenize encode` reads again.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shards/token_io.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/tokenizer.h"

namespace shapelaw {

class Output;

enum class TextFormat { text, jsonl };
TextFormat parse_text_format(const std::string& name);  // "text" or "jsonl"

// Writes decoded documents to a file or stdout ("-"). text: each document followed by
// a newline (a document that decodes to several lines stays several lines); jsonl:
// {"text": ...} per line.
class TextDocumentWriter {
 public:
  TextDocumentWriter(const std::string& model_path, const std::string& output, TextFormat format);
  ~TextDocumentWriter();
  const Tokenizer& model() const { return *model_; }
  // One document, without its EOS. Throws Error for an id outside the vocabulary.
  void write(const std::vector<uint32_t>& tokens);
  void close();
  uint64_t documents() const { return documents_; }

 private:
  std::unique_ptr<Tokenizer> model_;
  TextFormat format_;
  std::unique_ptr<Output> out_;
  std::string text_;
  uint64_t documents_ = 0;
};

struct DecodeOptions {
  TokenFormat input_format = TokenFormat::stream;
  TextFormat output_format = TextFormat::text;
};

// Reads documents from input ("-" = stdin) and writes their text. A token stream must
// name this tokenizer (kind and SHA-256); raw ids are split at the model's EOS id.
uint64_t decode_documents(const std::string& model_path, const std::string& input, const std::string& output,
                          const DecodeOptions& options);

}  // namespace shapelaw
