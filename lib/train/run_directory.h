#pragma once
// One run per output directory: what `train` checks about --out before writing anything,
// and the lock it holds while it writes. Torch-free.
#include <string>

#include <nlohmann/json.hpp>

namespace shapelaw {

// Refuses an --out that is not a run's to write: a shard directory (it has a
// manifest.json), the --data directory itself, or the directory of a finished run whose
// summary.json records other binding options (the list of differences in the message).
// binding/defaults: binding_config(cfg) and of the defaults (train/train_config.h).
void check_run_directory(const std::string& out, const std::string& data_directory, const nlohmann::json& binding,
                         const nlohmann::json& defaults);

// An exclusive flock on <out>/.lock, held until destruction (or the process's death: a
// SIGKILLed run leaves no stale lock). The file records the holder's pid and host, named
// when another train process is refused.
class RunDirectoryLock {
 public:
  explicit RunDirectoryLock(const std::string& out);  // throws Error when another process holds it
  ~RunDirectoryLock();
  RunDirectoryLock(const RunDirectoryLock&) = delete;
  RunDirectoryLock& operator=(const RunDirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace shapelaw
