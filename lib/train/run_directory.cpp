#include "train/run_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "records/versioned_json.h"
#include "train/checkpoint.h"
#include "train/checkpointer.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {
namespace fs = std::filesystem;
using json = nlohmann::json;

void check_run_directory(const std::string& out, const std::string& data_directory, const json& binding,
                         const json& defaults) {
  if (!fs::exists(out)) return;
  std::error_code ec;
  if (!data_directory.empty() && fs::equivalent(out, data_directory, ec))
    throw Error("--out " + out + " is the --data directory: the run's outputs would mix with the shards; give the "
                "run its own directory");
  if (fs::exists(fs::path(out) / "manifest.json"))
    throw Error("--out " + out + " is a shard directory (it has a manifest.json): give the run its own directory");
  const std::string summary_path = out + "/summary.json";
  // With checkpoints the resume check decides (and explains a changed run length).
  if (!fs::exists(summary_path) || !list_checkpoints(out).empty()) return;
  json summary;
  try {
    summary = records::read_versioned_json(summary_path, "shapelaw.summary", 1);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (--out holds something that is not this run's summary: use another --out)");
  }
  if (!summary.contains("binding_config")) return;  // older than the record: the checkpoints decide
  const auto diffs = config_differences(summary["binding_config"], binding, defaults);
  if (diffs.empty()) return;
  std::string list;
  for (auto& d : diffs) list += "\n  " + d;
  throw Error("--out " + out + " holds a finished run with other binding options (refusing to mix runs; use another "
              "--out):" + list);
}

RunDirectoryLock::RunDirectoryLock(const std::string& out) {
  const std::string path = out + "/.lock";
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(path + ": cannot open the run's lock file: " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder;
    try {
      holder = read_file(path);
    } catch (const Error&) {
    }
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw Error("--out " + out + " is in use by another train process" +
                  (holder.empty() ? std::string() : " (" + holder + ")") +
                  ": two runs in one directory would mix their checkpoints and summary; wait for it or use another "
                  "--out");
    throw Error(path + ": cannot lock: " + std::strerror(err));
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who = "pid " + std::to_string(::getpid()) + " on " + host + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    const ssize_t written = ::pwrite(fd_, who.data(), who.size(), 0);
    (void)written;  // the lock holds without the note
  }
}

RunDirectoryLock::~RunDirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace shapelaw
