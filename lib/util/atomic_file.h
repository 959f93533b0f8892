#pragma once
// Outputs appear whole or not at all: data goes to "<path>.tmp-<pid>" in the same
// directory, is fsync'ed, then renamed over <path>. A run killed at any point
// leaves at most a temporary file, never a truncated file under the final name.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace shapelaw {

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  uint64_t bytes_written() const { return bytes_written_; }
  const std::string& path() const { return path_; }
  void commit();  // flush, fsync, rename; throws Error on failure (e.g. disk full)

 private:
  std::string path_, temp_path_;
  std::FILE* file_ = nullptr;
  uint64_t bytes_written_ = 0;
};

// Convenience: the whole content at once.
void write_file_atomic(const std::string& path, std::string_view content);
std::string read_file(const std::string& path);
// Creates a directory and its parents; throws Error naming the path on failure.
void make_directories(const std::string& path);

}  // namespace shapelaw
