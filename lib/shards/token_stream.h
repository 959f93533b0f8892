#pragma once
// The token stream between `tokenize encode` and `shard` (docs/formats.md, "Token
// stream"): a header naming the tokenizer, then CRC-checked blocks of whole
// documents, each document ending in EOS, then an end block with totals. A stream
// cut short (a killed producer in a pipe) has no end block and is rejected.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "shards/writer.h"
#include "util/output.h"

namespace shapelaw {

class TokenStreamWriter {
 public:
  // path "-" writes to stdout; a file path is written atomically (visible once close()d).
  TokenStreamWriter(const std::string& path, const TokenizerInfo& tokenizer);
  ~TokenStreamWriter();
  // A block of whole documents, each terminated by tokenizer.eos_id.
  void write_block(const std::vector<uint32_t>& tokens, uint32_t documents);
  void close();  // writes the end block (totals) and commits
  uint64_t tokens() const { return total_tokens_; }
  uint64_t documents() const { return total_documents_; }

 private:
  std::unique_ptr<Output> out_;
  uint64_t total_tokens_ = 0, total_documents_ = 0;
  bool closed_ = false;
};

class TokenStreamReader {
 public:
  explicit TokenStreamReader(const std::string& path);  // "-" reads stdin
  ~TokenStreamReader();
  const TokenizerInfo& tokenizer() const { return tokenizer_; }
  // Next document's tokens without its EOS; false after a valid end block.
  bool next_document(std::vector<uint32_t>& tokens);
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  bool read_block();
  void read_exact(void* out, size_t size, const char* what);
  std::string path_;
  std::FILE* file_;
  bool owns_file_;
  TokenizerInfo tokenizer_;
  std::vector<uint32_t> block_;
  size_t position_ = 0;
  uint64_t tokens_seen_ = 0, documents_seen_ = 0, bytes_read_ = 0;
  bool ended_ = false;
};

}  // namespace shapelaw
