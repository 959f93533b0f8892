#pragma once
// Streaming input from a file or stdin ("-"), zstd-decompressed on the fly when the
// data starts with the zstd magic, so .jsonl and .jsonl.zst read through one path.
// Truncated or corrupt zstd data is an Error naming the file.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <zstd.h>

namespace shapelaw {

class ByteSource {
 public:
  explicit ByteSource(std::string path);  // "-" is stdin
  ~ByteSource();
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;

  // Reads up to size decompressed bytes; returns 0 only at the clean end of input.
  size_t read(char* out, size_t size);
  const std::string& path() const { return path_; }
  uint64_t raw_bytes_read() const { return raw_bytes_read_; }  // on-disk bytes consumed
  bool compressed() const { return zstd_ != nullptr; }

 private:
  size_t read_raw(char* out, size_t size);
  std::string path_;
  std::FILE* file_ = nullptr;
  bool owns_file_ = false;
  ZSTD_DStream* zstd_ = nullptr;
  std::vector<char> in_buffer_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  size_t last_zstd_hint_ = 0;  // 0 once a frame is complete
  uint64_t raw_bytes_read_ = 0;
  bool eof_ = false;
};

// Splits a ByteSource into lines (without the '\n'), counting them from 1.
class LineReader {
 public:
  explicit LineReader(ByteSource& source) : source_(source), buffer_(1 << 20) {}
  bool next(std::string& line);  // false at end of input
  long long line_number() const { return line_number_; }

 private:
  ByteSource& source_;
  std::vector<char> buffer_;
  size_t begin_ = 0, end_ = 0;
  long long line_number_ = 0;
  bool eof_ = false;
};

}  // namespace shapelaw
