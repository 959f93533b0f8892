#include "util/byte_source.h"

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace shapelaw {

ByteSource::ByteSource(std::string path) : path_(std::move(path)), in_buffer_(ZSTD_DStreamInSize()) {
  if (path_ == "-") {
    file_ = stdin;
    path_ = "<stdin>";
  } else {
    file_ = std::fopen(path_.c_str(), "rb");
    if (!file_) throw Error(located(path_, 0, std::string("cannot open: ") + std::strerror(errno)));
    owns_file_ = true;
  }
  // Sniff the zstd magic number (0xFD2FB528, little-endian) from the first bytes.
  size_t got = read_raw(in_buffer_.data(), 4);
  in_ = {in_buffer_.data(), got, 0};
  const unsigned char magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
  if (got == 4 && std::memcmp(in_buffer_.data(), magic, 4) == 0) {
    zstd_ = ZSTD_createDStream();
    ZSTD_initDStream(zstd_);
    last_zstd_hint_ = 1;
  }
}

ByteSource::~ByteSource() {
  if (zstd_) ZSTD_freeDStream(zstd_);
  if (owns_file_) std::fclose(file_);
}

size_t ByteSource::read_raw(char* out, size_t size) {
  if (eof_) return 0;
  size_t n = std::fread(out, 1, size, file_);
  if (n < size) {
    if (std::ferror(file_)) throw Error(located(path_, 0, std::string("read failed: ") + std::strerror(errno)));
    eof_ = true;
  }
  raw_bytes_read_ += n;
  return n;
}

size_t ByteSource::read(char* out, size_t size) {
  if (!zstd_) {
    // Plain input: first hand out the sniffed bytes.
    size_t from_buffer = std::min(size, in_.size - in_.pos);
    std::memcpy(out, static_cast<const char*>(in_.src) + in_.pos, from_buffer);
    in_.pos += from_buffer;
    return from_buffer + (from_buffer < size ? read_raw(out + from_buffer, size - from_buffer) : 0);
  }
  ZSTD_outBuffer output{out, size, 0};
  while (output.pos == 0) {
    if (in_.pos == in_.size) {
      size_t n = read_raw(in_buffer_.data(), in_buffer_.size());
      in_ = {in_buffer_.data(), n, 0};
      if (n == 0) {
        // Clean end only between frames; also drain what the decoder still holds.
        size_t hint = ZSTD_decompressStream(zstd_, &output, &in_);
        if (ZSTD_isError(hint)) throw Error(located(path_, 0, std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint)));
        if (output.pos > 0) return output.pos;
        if (last_zstd_hint_ != 0)
          throw Error(located(path_, 0, "truncated zstd data (the file ends inside a frame)"));
        return 0;
      }
    }
    size_t hint = ZSTD_decompressStream(zstd_, &output, &in_);
    if (ZSTD_isError(hint))
      throw Error(located(path_, 0, std::string("corrupt zstd data: ") + ZSTD_getErrorName(hint)));
    last_zstd_hint_ = hint;
  }
  return output.pos;
}

bool LineReader::next(std::string& line) {
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const void* newline = std::memchr(start, '\n', end_ - begin_);
    if (newline) {
      size_t length = static_cast<const char*>(newline) - start;
      line.assign(start, length);
      begin_ += length + 1;
      ++line_number_;
      return true;
    }
    if (eof_) {
      if (begin_ == end_) return false;
      line.assign(start, end_ - begin_);  // last line without '\n'
      begin_ = end_;
      ++line_number_;
      return true;
    }
    // Compact, grow if one line fills the buffer, refill.
    std::memmove(buffer_.data(), start, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);
    size_t n = source_.read(buffer_.data() + end_, buffer_.size() - end_);
    if (n == 0) eof_ = true;
    end_ += n;
  }
}

}  // namespace shapelaw
