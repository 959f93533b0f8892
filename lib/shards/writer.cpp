#include "shards/writer.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>

#include <zstd.h>

#include "shards/dataset.h"
#include "shards/shard_file.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/crc32c.h"
#include "util/error.h"
#include "util/little_endian.h"
#include "util/sha256.h"

namespace shapelaw {

using namespace shard_format;

namespace {

const char* const kSplitNames[] = {"train", "validation", "test"};

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Writes the shards of one split, one file at a time, frame by frame.
class SplitWriter {
 public:
  SplitWriter(std::string directory, std::string split, Header header, const ShardOptions& options)
      : directory_(std::move(directory)), split_(std::move(split)), header_(header), options_(options),
        cctx_(ZSTD_createCCtx()) {
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, options_.zstd_level);
    ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 0);  // CRC-32C covers the frames
  }
  ~SplitWriter() { ZSTD_freeCCtx(cctx_); }

  void add(const uint32_t* tokens, size_t count, uint32_t eos) {
    for (size_t i = 0; i < count; ++i) push(tokens[i]);
    push(eos);
    doc_ends_.push_back(shard_tokens_);
    ++total_documents_;
    if (shard_tokens_ >= options_.shard_tokens) close_shard();
  }

  nlohmann::json finish() {
    if (shard_tokens_ > 0) close_shard();
    return {{"tokens", total_tokens_}, {"documents", total_documents_}, {"shards", shards_}};
  }

 private:
  void push(uint32_t token) {
    if (!file_) open_shard();
    frame_.push_back(token);
    ++shard_tokens_;
    ++total_tokens_;
    if (frame_.size() == header_.frame_tokens) flush_frame();
    // A shard ends at a document end, so shard sizes are a target, not exact, unless
    // a single document is longer than a shard: then it is cut at the frame boundary.
    if (shard_tokens_ >= options_.shard_tokens + options_.shard_tokens / 2 && frame_.empty()) close_shard();
  }

  void open_shard() {
    char name[64];
    std::snprintf(name, sizeof name, "%s-%05zu.shard", split_.c_str(), shards_.size());
    file_name_ = name;
    file_ = std::make_unique<AtomicFile>(directory_ + "/" + file_name_);
    unsigned char head[kHeaderSize];
    encode_header(header_, head);
    hasher_ = Sha256();
    write(head, kHeaderSize);
  }

  void write(const void* data, size_t size) {
    file_->write(data, size);
    hasher_.update(data, size);
  }

  void flush_frame() {
    if (frame_.empty()) return;
    raw_.resize(frame_.size() * header_.token_width);
    le::put_tokens(frame_.data(), frame_.size(), header_.token_width, raw_.data());
    compressed_.resize(ZSTD_compressBound(raw_.size()));
    size_t size = ZSTD_compress2(cctx_, compressed_.data(), compressed_.size(), raw_.data(), raw_.size());
    if (ZSTD_isError(size)) throw Error(std::string("zstd compression failed: ") + ZSTD_getErrorName(size));
    FrameEntry entry;
    entry.offset = file_->bytes_written();
    entry.compressed_size = uint32_t(size);
    entry.tokens = uint32_t(frame_.size());
    entry.crc_compressed = crc32c(compressed_.data(), size);
    entry.crc_tokens = crc32c(raw_.data(), raw_.size());
    write(compressed_.data(), size);
    frames_.push_back(entry);
    frame_.clear();
  }

  void close_shard() {
    flush_frame();
    Trailer trailer;
    trailer.num_tokens = shard_tokens_;
    trailer.num_documents = doc_ends_.size();
    trailer.num_frames = frames_.size();
    trailer.frame_index_offset = file_->bytes_written();
    trailer.doc_index_offset = trailer.frame_index_offset + frames_.size() * kFrameEntrySize;
    std::vector<unsigned char> index(frames_.size() * kFrameEntrySize + doc_ends_.size() * 8);
    for (size_t i = 0; i < frames_.size(); ++i) encode_frame_entry(frames_[i], index.data() + i * kFrameEntrySize);
    for (size_t i = 0; i < doc_ends_.size(); ++i)
      le::put64(index.data() + frames_.size() * kFrameEntrySize + 8 * i, doc_ends_[i]);
    trailer.index_crc = crc32c(index.data(), index.size());
    write(index.data(), index.size());
    unsigned char tail[kTrailerSize];
    encode_trailer(trailer, tail);
    write(tail, kTrailerSize);
    uint64_t bytes = file_->bytes_written();
    file_->commit();
    file_.reset();
    shards_.push_back({{"file", file_name_}, {"tokens", shard_tokens_}, {"documents", doc_ends_.size()},
                       {"bytes", bytes}, {"sha256", hasher_.hex_digest()}});
    frames_.clear();
    doc_ends_.clear();
    shard_tokens_ = 0;
  }

  std::string directory_, split_, file_name_;
  Header header_;
  ShardOptions options_;
  ZSTD_CCtx* cctx_;
  std::unique_ptr<AtomicFile> file_;
  Sha256 hasher_;
  std::vector<uint32_t> frame_;
  std::vector<unsigned char> raw_, compressed_;
  std::vector<FrameEntry> frames_;
  std::vector<uint64_t> doc_ends_;
  uint64_t shard_tokens_ = 0, total_tokens_ = 0, total_documents_ = 0;
  nlohmann::json shards_ = nlohmann::json::array();
};

}  // namespace

std::string split_of_document(const uint32_t* tokens, size_t count, const ShardOptions& options) {
  uint64_t h = 0xcbf29ce484222325ull ^ splitmix64(options.split_seed);  // FNV-1a, seeded
  for (size_t i = 0; i < count; ++i) {
    h ^= tokens[i];
    h *= 0x100000001b3ull;
  }
  double u = double(splitmix64(h) >> 11) * 0x1.0p-53;
  if (u < options.validation_fraction) return "validation";
  if (u < options.validation_fraction + options.test_fraction) return "test";
  return "train";
}

struct ShardSetWriter::Impl {
  std::string directory;
  TokenizerInfo tokenizer;
  ShardOptions options;
  std::map<std::string, std::unique_ptr<SplitWriter>> splits;
  bool finished = false;
};

ShardSetWriter::ShardSetWriter(std::string directory, TokenizerInfo tokenizer, ShardOptions options)
    : impl_(new Impl{std::move(directory), std::move(tokenizer), options, {}, false}) {
  if (options.frame_tokens == 0 || options.shard_tokens == 0) throw Error("shard and frame sizes must be positive");
  if (options.validation_fraction < 0 || options.test_fraction < 0 ||
      options.validation_fraction + options.test_fraction >= 1)
    throw Error("validation and test fractions must be >= 0 and sum to less than 1");
  if (impl_->tokenizer.vocab_size == 0) throw Error("vocabulary size must be positive");
  make_directories(impl_->directory);
  // The manifest is written last; removing an old one first means a directory
  // being rewritten never presents old metadata over new shard files. The old set's
  // shard files go too (a smaller new set would leave them behind, stale), said once.
  const bool had_manifest = std::filesystem::remove(impl_->directory + "/manifest.json");
  size_t stale = 0;
  for (auto& entry : std::filesystem::directory_iterator(impl_->directory)) {
    const std::string name = entry.path().filename().string();
    for (const char* split : kSplitNames) {
      const std::string prefix = std::string(split) + "-";
      if (name.size() == prefix.size() + 11 && name.rfind(prefix, 0) == 0 &&
          name.compare(name.size() - 6, 6, ".shard") == 0 &&
          name.find_first_not_of("0123456789", prefix.size()) == name.size() - 6) {
        std::filesystem::remove(entry.path());
        ++stale;
      }
    }
  }
  if (had_manifest || stale > 0)
    std::fprintf(stderr, "shard: note: %s already held a shard set: replaced (%zu old shard files removed)\n",
                 impl_->directory.c_str(), stale);
  Header header;
  header.token_width = impl_->tokenizer.vocab_size <= 65536 ? 2 : 4;
  header.vocab_size = impl_->tokenizer.vocab_size;
  header.eos_id = impl_->tokenizer.eos_id;
  header.frame_tokens = options.frame_tokens;
  for (const char* name : kSplitNames)
    impl_->splits[name] = std::make_unique<SplitWriter>(impl_->directory, name, header, options);
}

ShardSetWriter::~ShardSetWriter() = default;

void ShardSetWriter::add_document(const uint32_t* tokens, size_t count) {
  add_document_to(split_of_document(tokens, count, impl_->options), tokens, count);
}

void ShardSetWriter::add_document_to(const std::string& split, const uint32_t* tokens, size_t count) {
  const uint32_t vocab = impl_->tokenizer.vocab_size;
  for (size_t i = 0; i < count; ++i)
    if (tokens[i] >= vocab)
      throw Error("token id " + std::to_string(tokens[i]) + " is outside the vocabulary (size " +
                  std::to_string(vocab) + ")");
  auto writer = impl_->splits.find(split);
  if (writer == impl_->splits.end()) throw Error("no split '" + split + "' (train, validation or test)");
  writer->second->add(tokens, count, impl_->tokenizer.eos_id);
}

nlohmann::json ShardSetWriter::finish(const nlohmann::json& extra_provenance) {
  if (impl_->finished) throw Error("ShardSetWriter::finish called twice");
  impl_->finished = true;
  const ShardOptions& o = impl_->options;
  nlohmann::json manifest = {
      {"format", kManifestFormat},
      {"version", kManifestVersion},
      {"token_width", impl_->tokenizer.vocab_size <= 65536 ? 2 : 4},
      {"frame_tokens", o.frame_tokens},
      {"shard_tokens", o.shard_tokens},
      {"zstd_level", o.zstd_level},
      {"tokenizer",
       {{"kind", impl_->tokenizer.kind},
        {"vocab_size", impl_->tokenizer.vocab_size},
        {"eos_id", impl_->tokenizer.eos_id},
        {"model_sha256", impl_->tokenizer.model_sha256},
        {"sentencepiece_version", impl_->tokenizer.sentencepiece_version}}},
      {"split_rule",
       {{"method", "document FNV-1a-64 of token ids, seeded, splitmix64 to [0,1)"},
        {"seed", o.split_seed},
        {"validation_fraction", o.validation_fraction},
        {"test_fraction", o.test_fraction}}},
      {"shapelaw_version", shapelaw_version()},
      {"git_rev", shapelaw_git_rev()},
  };
  for (auto& [name, writer] : impl_->splits) manifest["splits"][name] = writer->finish();
  if (!extra_provenance.is_null()) manifest["provenance"] = extra_provenance;
  write_file_atomic(impl_->directory + "/manifest.json", manifest.dump(2) + "\n");
  return manifest;
}

}  // namespace shapelaw
