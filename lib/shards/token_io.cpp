#include "shards/token_io.h"

#include <cstring>

#include "shards/token_stream.h"
#include "util/byte_source.h"
#include "util/error.h"
#include "util/little_endian.h"
#include "util/output.h"

namespace shapelaw {

namespace {
constexpr size_t kBlockTokens = 1 << 18;  // documents are buffered into blocks of about this size
size_t width_of(TokenFormat format) { return format == TokenFormat::raw16 ? 2 : 4; }
}  // namespace

TokenFormat parse_token_format(const std::string& name) {
  if (name == "stream") return TokenFormat::stream;
  if (name == "raw16") return TokenFormat::raw16;
  if (name == "raw32") return TokenFormat::raw32;
  throw Error("unknown token format '" + name + "' (stream, raw16 or raw32)");
}

const char* token_format_name(TokenFormat format) {
  switch (format) {
    case TokenFormat::stream: return "stream";
    case TokenFormat::raw16: return "raw16";
    case TokenFormat::raw32: return "raw32";
  }
  return "?";
}

TokenDocumentReader::TokenDocumentReader(const std::string& path, TokenFormat format, uint32_t eos_id)
    : format_(format), eos_id_(eos_id), name_(path == "-" ? "<stdin>" : path) {
  if (format == TokenFormat::stream) {
    stream_ = std::make_unique<TokenStreamReader>(path);
  } else {
    raw_ = std::make_unique<ByteSource>(path);
    bytes_.resize(1 << 20);
  }
}

TokenDocumentReader::~TokenDocumentReader() = default;

const TokenizerInfo* TokenDocumentReader::recorded_tokenizer() const {
  return stream_ ? &stream_->tokenizer() : nullptr;
}

// Moves the unread tail to the front and reads more; false when nothing more came.
bool TokenDocumentReader::fill() {
  if (eof_) return false;
  offset_ += begin_;
  std::memmove(bytes_.data(), bytes_.data() + begin_, end_ - begin_);
  end_ -= begin_;
  begin_ = 0;
  size_t got = raw_->read(bytes_.data() + end_, bytes_.size() - end_);
  if (got == 0) eof_ = true;
  end_ += got;
  return got > 0;
}

bool TokenDocumentReader::next(std::vector<uint32_t>& tokens) {
  if (stream_) return stream_->next_document(tokens);
  const size_t width = width_of(format_);
  tokens.clear();
  for (;;) {
    if (end_ - begin_ < width && !fill()) {
      if (end_ != begin_)
        throw Error(located(name_, 0, std::string(token_format_name(format_)) + " input ends inside a token at byte " +
                                          std::to_string(offset_ + begin_) + " (its length is not a multiple of " +
                                          std::to_string(width) + ")"));
      return !tokens.empty();
    }
    while (end_ - begin_ >= width) {
      const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes_.data() + begin_);
      uint32_t token = width == 2 ? uint32_t(p[0]) | uint32_t(p[1]) << 8 : le::get32(p);
      begin_ += width;
      if (token == eos_id_) return true;
      tokens.push_back(token);
    }
  }
}

TokenDocumentWriter::TokenDocumentWriter(const std::string& path, TokenFormat format, const TokenizerInfo& tokenizer)
    : format_(format), tokenizer_(tokenizer) {
  if (format == TokenFormat::raw16 && tokenizer.vocab_size > 65536)
    throw Error("raw16 holds ids below 65536; this vocabulary has " + std::to_string(tokenizer.vocab_size) +
                " (use raw32)");
  if (format == TokenFormat::stream)
    stream_ = std::make_unique<TokenStreamWriter>(path, tokenizer);
  else
    raw_ = std::make_unique<Output>(path);
}

TokenDocumentWriter::~TokenDocumentWriter() = default;

void TokenDocumentWriter::write(const uint32_t* tokens, size_t count) {
  block_.insert(block_.end(), tokens, tokens + count);
  block_.push_back(tokenizer_.eos_id);
  ++block_documents_;
  ++documents_;
  tokens_ += count + 1;
  if (block_.size() >= kBlockTokens) flush_block();
}

void TokenDocumentWriter::flush_block() {
  if (block_.empty()) return;
  if (stream_) {
    stream_->write_block(block_, block_documents_);
  } else {
    const size_t width = width_of(format_);
    bytes_.resize(block_.size() * width);
    le::put_tokens(block_.data(), block_.size(), width, bytes_.data());
    raw_->write(bytes_.data(), bytes_.size());
  }
  block_.clear();
  block_documents_ = 0;
}

void TokenDocumentWriter::close() {
  flush_block();
  if (stream_) stream_->close();
  else raw_->commit();
}

}  // namespace shapelaw
