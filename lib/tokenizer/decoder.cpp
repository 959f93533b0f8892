#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/output.h"

namespace shapelaw {

TextFormat parse_text_format(const std::string& name) {
  if (name == "text") return TextFormat::text;
  if (name == "jsonl") return TextFormat::jsonl;
  throw Error("unknown text format '" + name + "' (text or jsonl)");
}

TextDocumentWriter::TextDocumentWriter(const std::string& model_path, const std::string& output, TextFormat format)
    : model_(load_tokenizer(model_path)), format_(format), out_(std::make_unique<Output>(output)) {}

TextDocumentWriter::~TextDocumentWriter() = default;

void TextDocumentWriter::write(const std::vector<uint32_t>& tokens) {
  try {
    model_->decode(tokens, text_);
  } catch (const Error& e) {
    throw Error("document " + std::to_string(documents_) + ": " + e.what());
  }
  if (format_ == TextFormat::jsonl) {
    // Byte-fallback pieces (sentencepiece) or byte tokens (GPT-2) of a cut document may
    // not form UTF-8; replace rather than fail.
    text_ = nlohmann::json{{"text", text_}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  text_ += '\n';
  out_->write(text_);
  ++documents_;
}

void TextDocumentWriter::close() { out_->commit(); }

uint64_t decode_documents(const std::string& model_path, const std::string& input, const std::string& output,
                          const DecodeOptions& options) {
  TextDocumentWriter writer(model_path, output, options.output_format);
  TokenDocumentReader reader(input, options.input_format, writer.model().info().eos_id);
  if (const TokenizerInfo* recorded = reader.recorded_tokenizer())
    check_same_tokenizer(writer.model(), *recorded, "the token stream");
  std::vector<uint32_t> tokens;
  while (reader.next(tokens)) writer.write(tokens);
  writer.close();
  return writer.documents();
}

}  // namespace shapelaw
