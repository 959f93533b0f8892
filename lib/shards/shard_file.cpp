#include "shards/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>

#include <zstd.h>

#include "util/crc32c.h"
#include "util/error.h"
#include "util/little_endian.h"

namespace shapelaw {

namespace shard_format {

void encode_header(const Header& h, unsigned char out[kHeaderSize]) {
  std::memset(out, 0, kHeaderSize);
  std::memcpy(out, kMagic, 8);
  le::put32(out + 8, h.version);
  le::put32(out + 12, h.token_width);
  le::put32(out + 16, h.vocab_size);
  le::put32(out + 20, h.eos_id);
  le::put32(out + 24, h.frame_tokens);
  le::put32(out + 60, crc32c(out, 60));
}

void encode_trailer(const Trailer& t, unsigned char out[kTrailerSize]) {
  std::memset(out, 0, kTrailerSize);
  le::put64(out + 0, t.num_tokens);
  le::put64(out + 8, t.num_documents);
  le::put64(out + 16, t.num_frames);
  le::put64(out + 24, t.frame_index_offset);
  le::put64(out + 32, t.doc_index_offset);
  le::put32(out + 40, t.index_crc);
  std::memcpy(out + 56, kTrailerMagic, 8);
  le::put32(out + 52, crc32c(out, 52));
}

void encode_frame_entry(const FrameEntry& e, unsigned char out[kFrameEntrySize]) {
  le::put64(out + 0, e.offset);
  le::put32(out + 8, e.compressed_size);
  le::put32(out + 12, e.tokens);
  le::put32(out + 16, e.crc_compressed);
  le::put32(out + 20, e.crc_tokens);
}

}  // namespace shard_format

using namespace shard_format;

namespace {

std::atomic<uint64_t> next_shard_id{1};

void pread_exact(int fd, const std::string& path, void* out, size_t size, uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (size > 0) {
    ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(located(path, 0, "cannot read " + std::to_string(size) + " bytes at byte offset " +
                                      std::to_string(offset) + (n < 0 ? std::string(": ") + std::strerror(errno) : ": file is truncated")));
    p += n; size -= size_t(n); offset += uint64_t(n);
  }
}

struct FrameCache {
  uint64_t shard_id = 0, frame = ~0ull;
  std::vector<unsigned char> bytes;
  std::vector<unsigned char> compressed;
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx{ZSTD_createDCtx(), ZSTD_freeDCtx};
};
thread_local FrameCache frame_cache;

}  // namespace

ShardFile::ShardFile(std::string path) : path_(std::move(path)), id_(next_shard_id++) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(located(path_, 0, std::string("cannot open shard: ") + std::strerror(errno)));
  struct stat st;
  ::fstat(fd_, &st);
  file_size_ = uint64_t(st.st_size);
  auto bad = [&](uint64_t offset, const std::string& what) {
    return Error(located(path_, 0, "corrupt shard at byte offset " + std::to_string(offset) + ": " + what));
  };
  if (file_size_ < kHeaderSize + kTrailerSize) throw bad(0, "file too small to be a shard");

  unsigned char head[kHeaderSize];
  pread_exact(fd_, path_, head, kHeaderSize, 0);
  if (std::memcmp(head, kMagic, 8) != 0) throw bad(0, "not a shapelaw shard (bad magic)");
  if (le::get32(head + 60) != crc32c(head, 60)) throw bad(0, "header checksum mismatch");
  header_.version = le::get32(head + 8);
  if (header_.version != kVersion)
    throw bad(8, "unsupported shard version " + std::to_string(header_.version));
  header_.token_width = le::get32(head + 12);
  header_.vocab_size = le::get32(head + 16);
  header_.eos_id = le::get32(head + 20);
  header_.frame_tokens = le::get32(head + 24);
  if ((header_.token_width != 2 && header_.token_width != 4) || header_.frame_tokens == 0)
    throw bad(12, "invalid token width or frame size");

  uint64_t trailer_at = file_size_ - kTrailerSize;
  unsigned char tail[kTrailerSize];
  pread_exact(fd_, path_, tail, kTrailerSize, trailer_at);
  if (std::memcmp(tail + 56, kTrailerMagic, 8) != 0)
    throw bad(trailer_at, "missing trailer (truncated or unfinished shard)");
  if (le::get32(tail + 52) != crc32c(tail, 52)) throw bad(trailer_at, "trailer checksum mismatch");
  trailer_.num_tokens = le::get64(tail + 0);
  trailer_.num_documents = le::get64(tail + 8);
  trailer_.num_frames = le::get64(tail + 16);
  trailer_.frame_index_offset = le::get64(tail + 24);
  trailer_.doc_index_offset = le::get64(tail + 32);
  trailer_.index_crc = le::get32(tail + 40);
  uint64_t index_bytes = trailer_.num_frames * kFrameEntrySize;
  uint64_t doc_bytes = trailer_.num_documents * 8;
  if (trailer_.frame_index_offset + index_bytes != trailer_.doc_index_offset ||
      trailer_.doc_index_offset + doc_bytes != trailer_at)
    throw bad(trailer_at, "index offsets inconsistent with file size");

  std::vector<unsigned char> index(index_bytes + doc_bytes);
  pread_exact(fd_, path_, index.data(), index.size(), trailer_.frame_index_offset);
  if (crc32c(index.data(), index.size()) != trailer_.index_crc)
    throw bad(trailer_.frame_index_offset, "index checksum mismatch");
  frames_.resize(trailer_.num_frames);
  uint64_t tokens = 0;
  for (uint64_t i = 0; i < trailer_.num_frames; ++i) {
    const unsigned char* p = index.data() + i * kFrameEntrySize;
    frames_[i] = {le::get64(p), le::get32(p + 8), le::get32(p + 12), le::get32(p + 16), le::get32(p + 20)};
    tokens += frames_[i].tokens;
  }
  if (tokens != trailer_.num_tokens) throw bad(trailer_.frame_index_offset, "frame token counts do not add up");
  doc_ends_.resize(trailer_.num_documents);
  for (uint64_t i = 0; i < trailer_.num_documents; ++i) doc_ends_[i] = le::get64(index.data() + index_bytes + 8 * i);
}

ShardFile::~ShardFile() {
  if (fd_ >= 0) ::close(fd_);
}

const std::vector<unsigned char>& ShardFile::frame_bytes(uint64_t frame) const {
  FrameCache& cache = frame_cache;
  if (cache.shard_id == id_ && cache.frame == frame) return cache.bytes;
  const FrameEntry& entry = frames_[frame];
  auto bad = [&](const std::string& what) {
    cache.frame = ~0ull;
    return Error(located(path_, 0, "corrupt frame " + std::to_string(frame) + " at byte offset " +
                                      std::to_string(entry.offset) + ": " + what));
  };
  cache.compressed.resize(entry.compressed_size);
  pread_exact(fd_, path_, cache.compressed.data(), entry.compressed_size, entry.offset);
  if (crc32c(cache.compressed.data(), entry.compressed_size) != entry.crc_compressed)
    throw bad("checksum mismatch in compressed data");
  size_t expected = size_t(entry.tokens) * header_.token_width;
  cache.bytes.resize(expected);
  size_t got = ZSTD_decompressDCtx(cache.dctx.get(), cache.bytes.data(), expected,
                                   cache.compressed.data(), entry.compressed_size);
  if (ZSTD_isError(got)) throw bad(std::string("zstd: ") + ZSTD_getErrorName(got));
  if (got != expected) throw bad("decompressed size differs from the index");
  if (crc32c(cache.bytes.data(), expected) != entry.crc_tokens) throw bad("checksum mismatch in tokens");
  cache.shard_id = id_;
  cache.frame = frame;
  return cache.bytes;
}

void ShardFile::read(uint64_t offset, size_t count, uint32_t* out) const {
  if (offset + count > num_tokens())
    throw Error(located(path_, 0, "read past the end: tokens [" + std::to_string(offset) + ", " +
                                      std::to_string(offset + count) + ") of " + std::to_string(num_tokens())));
  const uint64_t per_frame = header_.frame_tokens;
  while (count > 0) {
    uint64_t frame = offset / per_frame;
    uint64_t within = offset % per_frame;
    const auto& bytes = frame_bytes(frame);
    size_t take = std::min<uint64_t>(count, frames_[frame].tokens - within);
    if (header_.token_width == 2) {
      const unsigned char* p = bytes.data() + within * 2;
      for (size_t i = 0; i < take; ++i) out[i] = uint32_t(p[2 * i]) | uint32_t(p[2 * i + 1]) << 8;
    } else {
      std::memcpy(out, bytes.data() + within * 4, take * 4);
    }
    out += take; offset += take; count -= take;
  }
}

void ShardFile::verify() const {
  for (uint64_t f = 0; f < frames_.size(); ++f) frame_bytes(f);
  for (uint64_t i = 1; i < doc_ends_.size(); ++i)
    if (doc_ends_[i] <= doc_ends_[i - 1] || doc_ends_[i] > num_tokens())
      throw Error(located(path_, 0, "document index not increasing at entry " + std::to_string(i)));
}

}  // namespace shapelaw
