#pragma once
// One shard file (docs/formats.md, "Token shards"): a header, independent zstd frames
// of `frame_tokens` tokens each, a frame index, a document-end index and a trailer,
// every part covered by CRC-32C. Reads any token range by decompressing only the
// frames it touches.
#include <cstdint>
#include <string>
#include <vector>

namespace shapelaw {

namespace shard_format {
constexpr char kMagic[8] = {'S', 'H', 'P', 'L', 'S', 'H', 'R', 'D'};
constexpr char kTrailerMagic[8] = {'S', 'H', 'P', 'L', 'T', 'A', 'I', 'L'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderSize = 64;
constexpr size_t kTrailerSize = 64;
constexpr size_t kFrameEntrySize = 24;

struct Header {
  uint32_t version = kVersion;
  uint32_t token_width = 2;  // bytes per token: 2 (uint16) or 4 (uint32)
  uint32_t vocab_size = 0;
  uint32_t eos_id = 0;
  uint32_t frame_tokens = 0;
};

struct FrameEntry {
  uint64_t offset = 0;           // byte offset of the zstd frame in the file
  uint32_t compressed_size = 0;
  uint32_t tokens = 0;
  uint32_t crc_compressed = 0;   // CRC-32C of the stored frame bytes
  uint32_t crc_tokens = 0;       // CRC-32C of the decompressed little-endian tokens
};

struct Trailer {
  uint64_t num_tokens = 0, num_documents = 0, num_frames = 0;
  uint64_t frame_index_offset = 0, doc_index_offset = 0;
  uint32_t index_crc = 0;  // CRC-32C of frame index bytes followed by doc index bytes
};

void encode_header(const Header& h, unsigned char out[kHeaderSize]);
void encode_trailer(const Trailer& t, unsigned char out[kTrailerSize]);
void encode_frame_entry(const FrameEntry& e, unsigned char out[kFrameEntrySize]);
}  // namespace shard_format

class ShardFile {
 public:
  // Opens and checks header, trailer and indexes (CRC-32C); frames are checked as read.
  explicit ShardFile(std::string path);
  ~ShardFile();
  ShardFile(const ShardFile&) = delete;
  ShardFile& operator=(const ShardFile&) = delete;

  const std::string& path() const { return path_; }
  const shard_format::Header& header() const { return header_; }
  uint64_t num_tokens() const { return trailer_.num_tokens; }
  uint64_t num_documents() const { return trailer_.num_documents; }
  uint64_t file_size() const { return file_size_; }
  const std::vector<shard_format::FrameEntry>& frames() const { return frames_; }
  // Token offset (within this shard) one past the end of the i-th document ending here.
  uint64_t document_end(uint64_t i) const { return doc_ends_.at(i); }

  // Copies tokens [offset, offset+count) of this shard into out. Thread-safe.
  void read(uint64_t offset, size_t count, uint32_t* out) const;
  // Decompresses and checks every frame; throws Error naming the file and the byte
  // offset of the first bad frame.
  void verify() const;

 private:
  // Decoded little-endian token bytes of one frame, cached per thread.
  const std::vector<unsigned char>& frame_bytes(uint64_t frame) const;
  std::string path_;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  uint64_t id_;  // distinguishes files in the per-thread cache
  shard_format::Header header_;
  shard_format::Trailer trailer_;
  std::vector<shard_format::FrameEntry> frames_;
  std::vector<uint64_t> doc_ends_;
};

}  // namespace shapelaw
