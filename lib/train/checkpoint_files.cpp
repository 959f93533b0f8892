#include "train/checkpoint_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "util/atomic_file.h"

namespace shapelaw {
namespace fs = std::filesystem;

CheckpointFileWriter::CheckpointFileWriter(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path_ + ": cannot create checkpoint file: " + std::strerror(errno));
}

CheckpointFileWriter::~CheckpointFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(path_.c_str());
  }
}

std::function<size_t(const void*, size_t)> CheckpointFileWriter::sink() {
  return [this](const void* data, size_t n) -> size_t {
    if (errno_ != 0) return n;  // already failed: swallow the rest, finish() reports it
    if (data == nullptr) {      // LibTorch's "metadata only" records: a hole of n bytes
      if (::lseek(fd_, off_t(n), SEEK_CUR) < 0) errno_ = errno;
      static const char zeros[4096] = {};
      for (size_t left = n; left > 0;) {
        const size_t k = std::min(left, sizeof zeros);
        hash_.update(zeros, k);
        left -= k;
      }
      return n;
    }
    hash_.update(data, n);
    const char* p = static_cast<const char*>(data);
    for (size_t left = n; left > 0;) {
      const ssize_t w = ::write(fd_, p, left);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        errno_ = w < 0 ? errno : ENOSPC;
        break;
      }
      p += w;
      left -= size_t(w);
    }
    return n;
  };
}

std::string CheckpointFileWriter::finish() {
  if (errno_ == 0 && ::fsync(fd_) != 0) errno_ = errno;
  if (::close(fd_) != 0 && errno_ == 0) errno_ = errno;
  fd_ = -1;
  if (errno_ != 0) {
    ::unlink(path_.c_str());
    throw Error(path_ + ": cannot write checkpoint file: " + std::strerror(errno_));
  }
  return hash_.hex_digest();
}

void write_checksums(const std::string& dir, const std::map<std::string, std::string>& sums) {
  std::string text;
  for (auto& [name, hash] : sums) text += hash + "  " + name + "\n";
  write_file_atomic(dir + "/" + kChecksumFile, text);
}

void write_checksum_sidecar(const std::string& path, const std::string& sha256) {
  write_file_atomic(path + ".sha256", sha256 + "\n");
}

std::string take_checksum_sidecar(const std::string& path) {
  std::string hash = read_file(path + ".sha256");
  while (!hash.empty() && (hash.back() == '\n' || hash.back() == '\r')) hash.pop_back();
  fs::remove(path + ".sha256");
  return hash;
}

std::string verify_checkpoint_files(const std::string& dir, const std::vector<std::string>& names) {
  const std::string sums_path = dir + "/" + kChecksumFile;
  if (!fs::exists(sums_path)) return "";
  std::map<std::string, std::string> listed;
  std::istringstream in(read_file(sums_path));
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    if (line.size() < 67 || line.compare(64, 2, "  ") != 0)
      return located(sums_path, number, "not a sha256sum line");
    listed[line.substr(66)] = line.substr(0, 64);
  }
  std::vector<std::string> wanted = names;
  if (wanted.empty())
    for (auto& [name, hash] : listed) wanted.push_back(name);
  for (const auto& name : wanted) {
    auto it = listed.find(name);
    if (it == listed.end()) return sums_path + ": does not list " + name;
    const std::string path = dir + "/" + name;
    if (!fs::exists(path)) return path + ": missing (SHA256SUMS lists it)";
    const std::string actual = sha256_file_hex(path);
    if (actual != it->second)
      return path + ": SHA-256 " + actual.substr(0, 12) + "… differs from SHA256SUMS' " + it->second.substr(0, 12) +
             "…: the file changed after it was written";
  }
  return "";
}

}  // namespace shapelaw
