#include "shards/token_stream.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include "util/atomic_file.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "util/little_endian.h"

namespace shapelaw {

namespace {
constexpr char kStreamMagic[8] = {'S', 'H', 'P', 'L', 'T', 'O', 'K', 'S'};
// 2 names the tokenizer's kind; 1 (sentencepiece only) is still read.
constexpr uint32_t kStreamVersion = 2;
constexpr size_t kStreamHeaderSize = 128;
constexpr uint32_t kMaxBlockTokens = 1u << 28;
}  // namespace

TokenStreamWriter::TokenStreamWriter(const std::string& path, const TokenizerInfo& tokenizer)
    : out_(std::make_unique<Output>(path)) {
  // Header: magic, version, vocab, eos, sha256 (64 hex chars), kind, sentencepiece version.
  unsigned char header[kStreamHeaderSize] = {};
  std::memcpy(header, kStreamMagic, 8);
  le::put32(header + 8, kStreamVersion);
  le::put32(header + 12, tokenizer.vocab_size);
  le::put32(header + 16, tokenizer.eos_id);
  std::memcpy(header + 20, tokenizer.model_sha256.data(), std::min<size_t>(64, tokenizer.model_sha256.size()));
  std::memcpy(header + 84, tokenizer.kind.data(), std::min<size_t>(16, tokenizer.kind.size()));
  std::memcpy(header + 100, tokenizer.sentencepiece_version.data(),
              std::min<size_t>(24, tokenizer.sentencepiece_version.size()));
  le::put32(header + 124, crc32c(header, 124));
  out_->write(header, sizeof header);
}

TokenStreamWriter::~TokenStreamWriter() = default;

void TokenStreamWriter::write_block(const std::vector<uint32_t>& tokens, uint32_t documents) {
  if (tokens.empty()) return;
  if (tokens.size() > kMaxBlockTokens) throw Error("token stream block too large");
  unsigned char head[12];
  le::put32(head, uint32_t(tokens.size()));
  le::put32(head + 4, documents);
  le::put32(head + 8, crc32c(tokens.data(), tokens.size() * 4));
  out_->write(head, sizeof head);
  out_->write(tokens.data(), tokens.size() * 4);
  total_tokens_ += tokens.size();
  total_documents_ += documents;
}

void TokenStreamWriter::close() {
  if (closed_) return;
  closed_ = true;
  unsigned char end[32] = {};
  // End block: zero tokens and documents, then the totals and their CRC.
  le::put64(end + 12, total_tokens_);
  le::put64(end + 20, total_documents_);
  le::put32(end + 28, crc32c(end + 12, 16));
  out_->write(end, sizeof end);
  out_->commit();
}

TokenStreamReader::TokenStreamReader(const std::string& path)
    : path_(path == "-" ? "<stdin>" : path), file_(path == "-" ? stdin : std::fopen(path.c_str(), "rb")),
      owns_file_(path != "-") {
  if (!file_) throw Error(located(path_, 0, std::string("cannot open: ") + std::strerror(errno)));
  unsigned char header[kStreamHeaderSize] = {};
  size_t got = std::fread(header, 1, sizeof header, file_);
  bytes_read_ += got;
  if (got < 8 || std::memcmp(header, kStreamMagic, 8) != 0)
    throw Error(located(path_, 0, "not a shapelaw token stream (bad magic); produce it with `tokenize encode`"));
  if (got < sizeof header) throw Error(located(path_, 0, "token stream truncated in its header"));
  if (le::get32(header + 124) != crc32c(header, 124)) throw Error(located(path_, 0, "token stream header checksum mismatch"));
  const uint32_t version = le::get32(header + 8);
  if (version != 1 && version != kStreamVersion) throw Error(located(path_, 0, "unsupported token stream version"));
  tokenizer_.vocab_size = le::get32(header + 12);
  tokenizer_.eos_id = le::get32(header + 16);
  tokenizer_.model_sha256.assign(reinterpret_cast<char*>(header + 20), strnlen(reinterpret_cast<char*>(header + 20), 64));
  if (version == 1) {
    tokenizer_.kind = "sentencepiece";
    tokenizer_.sentencepiece_version.assign(reinterpret_cast<char*>(header + 84), strnlen(reinterpret_cast<char*>(header + 84), 40));
  } else {
    tokenizer_.kind.assign(reinterpret_cast<char*>(header + 84), strnlen(reinterpret_cast<char*>(header + 84), 16));
    tokenizer_.sentencepiece_version.assign(reinterpret_cast<char*>(header + 100), strnlen(reinterpret_cast<char*>(header + 100), 24));
  }
}

TokenStreamReader::~TokenStreamReader() {
  if (owns_file_) std::fclose(file_);
}

void TokenStreamReader::read_exact(void* out, size_t size, const char* what) {
  size_t n = std::fread(out, 1, size, file_);
  bytes_read_ += n;
  if (n != size)
    throw Error(located(path_, 0, std::string("token stream truncated in ") + what + " at byte offset " +
                                      std::to_string(bytes_read_) + " (did the producer fail?)"));
}

bool TokenStreamReader::read_block() {
  unsigned char head[12];
  read_exact(head, sizeof head, "a block header");
  uint32_t count = le::get32(head), documents = le::get32(head + 4), crc = le::get32(head + 8);
  if (count == 0) {
    unsigned char totals[20];
    read_exact(totals, sizeof totals, "the end block");
    if (le::get32(totals + 16) != crc32c(totals, 16) || le::get64(totals) != tokens_seen_ ||
        le::get64(totals + 8) != documents_seen_)
      throw Error(located(path_, 0, "token stream end block does not match the data read"));
    ended_ = true;
    return false;
  }
  if (count > kMaxBlockTokens) throw Error(located(path_, 0, "corrupt token stream block header"));
  block_.resize(count);
  read_exact(block_.data(), size_t(count) * 4, "a block");
  if (crc32c(block_.data(), size_t(count) * 4) != crc)
    throw Error(located(path_, 0, "token stream block checksum mismatch before byte offset " + std::to_string(bytes_read_)));
  if (block_.back() != tokenizer_.eos_id)
    throw Error(located(path_, 0, "token stream block does not end at a document boundary"));
  tokens_seen_ += count;
  documents_seen_ += documents;
  position_ = 0;
  return true;
}

bool TokenStreamReader::next_document(std::vector<uint32_t>& tokens) {
  if (ended_) return false;
  if (position_ == block_.size() && !read_block()) return false;
  size_t end = position_;
  while (block_[end] != tokenizer_.eos_id) ++end;
  tokens.assign(block_.begin() + position_, block_.begin() + end);
  position_ = end + 1;
  return true;
}

}  // namespace shapelaw
