#pragma once
// The files of one checkpoint directory, written so that a full disk is one Error (never
// an abort inside LibTorch's zip writer), and checked on every read: SHA256SUMS lists the
// SHA-256 of every other file (`sha256sum -c SHA256SUMS` checks it by hand), computed
// while the bytes are written. See docs/formats.md, "train outputs". Torch-free (the
// torch::save wrapper is train/checkpoint_save.h).
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/sha256.h"

namespace shapelaw {

inline constexpr const char* kChecksumFile = "SHA256SUMS";

// One file written through torch::save's callback. The callback never reports a failed
// write to LibTorch (its writer throws from a destructor then: std::terminate); the
// first errno is kept and finish() throws it as an Error naming the file.
class CheckpointFileWriter {
 public:
  explicit CheckpointFileWriter(std::string path);
  ~CheckpointFileWriter();  // an unfinished file is removed
  CheckpointFileWriter(const CheckpointFileWriter&) = delete;
  CheckpointFileWriter& operator=(const CheckpointFileWriter&) = delete;
  std::function<size_t(const void*, size_t)> sink();
  std::string finish();  // fsync, close; the file's SHA-256 (hex); throws Error

 private:
  std::string path_;
  int fd_ = -1, errno_ = 0;
  Sha256 hash_;
};

// "<sha256>  <name>" lines, sorted by name, written atomically as <dir>/SHA256SUMS.
void write_checksums(const std::string& dir, const std::map<std::string, std::string>& sha256_by_name);
// The sidecar a ZeRO rank leaves beside its optimizer slice (<file>.sha256), read and
// removed by rank 0 when it writes SHA256SUMS.
void write_checksum_sidecar(const std::string& path, const std::string& sha256);
std::string take_checksum_sidecar(const std::string& path);

// Checks `names` (every file SHA256SUMS lists when empty) against SHA256SUMS: "" when they
// match, else why not ("model.pt: SHA-256 1a2b3c4d5e6f… differs from SHA256SUMS'
// 9f8e7d6c5b4a…: the file changed after it was written"). A checkpoint written before
// checksums existed (no SHA256SUMS) passes unverified.
std::string verify_checkpoint_files(const std::string& dir, const std::vector<std::string>& names = {});

}  // namespace shapelaw
