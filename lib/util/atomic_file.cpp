#include "util/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace shapelaw {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  // A device or pipe (/dev/null, /dev/stdout, a FIFO) is written in place: renaming
  // over it would replace the device with a regular file.
  std::error_code ec;
  auto status = std::filesystem::status(path_, ec);
  bool special = !ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
  temp_path_ = special ? path_ : path_ + ".tmp-" + std::to_string(::getpid());
  file_ = std::fopen(temp_path_.c_str(), "wb");
  if (!file_) throw Error(located(path_, 0, "cannot create output: " + errno_text()));
}

AtomicFile::~AtomicFile() {
  if (file_) {
    std::fclose(file_);
    if (temp_path_ != path_) std::remove(temp_path_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t size) {
  if (size == 0) return;
  if (std::fwrite(data, 1, size, file_) != size)
    throw Error(located(path_, 0, "write failed: " + errno_text()));
  bytes_written_ += size;
}

void AtomicFile::commit() {
  if (!file_) throw Error(located(path_, 0, "commit called twice"));
  const bool in_place = temp_path_ == path_;
  bool ok = std::fflush(file_) == 0 && (in_place || ::fsync(::fileno(file_)) == 0);
  std::string why = ok ? "" : errno_text();
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  if (in_place) {
    if (!ok) throw Error(located(path_, 0, "cannot finish writing output: " + why));
    return;
  }
  if (!ok || std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
    if (why.empty()) why = errno_text();
    std::remove(temp_path_.c_str());
    throw Error(located(path_, 0, "cannot finish writing output: " + why));
  }
}

void write_file_atomic(const std::string& path, std::string_view content) {
  AtomicFile out(path);
  out.write(content);
  out.commit();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(located(path, 0, "cannot open: " + errno_text()));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw Error(located(path, 0, "read failed"));
  return buffer.str();
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error(located(path, 0, "cannot create directory: " + ec.message()));
}

}  // namespace shapelaw
