#pragma once
// Whole documents of token ids in and out of the binary formats a user pipes between
// tools (docs/formats.md, "Raw token ids"): the checked token stream, or bare
// little-endian uint16/uint32 ids with an EOS after each document (the layout other
// training code reads). `shard cat` writes them, `tokenize decode` reads them.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shards/writer.h"

namespace shapelaw {

enum class TokenFormat { stream, raw16, raw32 };

// "stream", "raw16", "raw32"; throws Error naming the accepted values otherwise.
TokenFormat parse_token_format(const std::string& name);
const char* token_format_name(TokenFormat format);

class ByteSource;
class Output;
class TokenStreamReader;
class TokenStreamWriter;

class TokenDocumentReader {
 public:
  // path "-" = stdin. Raw ids carry no header: `eos_id` (from the tokenizer) ends each
  // document, and a last document without one still counts.
  TokenDocumentReader(const std::string& path, TokenFormat format, uint32_t eos_id);
  ~TokenDocumentReader();
  // Next document without its EOS; false at the end of input.
  bool next(std::vector<uint32_t>& tokens);
  // What the stream's header records; null for raw ids, which record nothing.
  const TokenizerInfo* recorded_tokenizer() const;

 private:
  bool fill();
  TokenFormat format_;
  uint32_t eos_id_;
  std::string name_;
  std::unique_ptr<TokenStreamReader> stream_;
  std::unique_ptr<ByteSource> raw_;
  std::vector<char> bytes_;
  size_t begin_ = 0, end_ = 0;
  uint64_t offset_ = 0;  // bytes consumed before bytes_[begin_]
  bool eof_ = false;
};

class TokenDocumentWriter {
 public:
  // path "-" = stdout. Refuses raw16 for a vocabulary above 65536.
  TokenDocumentWriter(const std::string& path, TokenFormat format, const TokenizerInfo& tokenizer);
  ~TokenDocumentWriter();
  void write(const uint32_t* tokens, size_t count);  // one document, without EOS
  void close();  // flushes; a file appears under its name only now
  uint64_t documents() const { return documents_; }
  uint64_t tokens() const { return tokens_; }  // EOS included

 private:
  void flush_block();
  TokenFormat format_;
  TokenizerInfo tokenizer_;
  std::unique_ptr<TokenStreamWriter> stream_;
  std::unique_ptr<Output> raw_;
  std::vector<uint32_t> block_;
  std::vector<unsigned char> bytes_;
  uint32_t block_documents_ = 0;
  uint64_t documents_ = 0, tokens_ = 0;
};

}  // namespace shapelaw
