#include "util/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {

Output::Output(const std::string& path) : name_(shapelaw::is_stdout(path) ? "<stdout>" : path) {
  if (!shapelaw::is_stdout(path)) file_ = std::make_unique<AtomicFile>(path);
}

Output::~Output() = default;

void Output::write(const void* data, size_t size) {
  if (file_) {
    file_->write(data, size);
  } else if (size > 0 && std::fwrite(data, 1, size, stdout) != size) {
    throw Error(std::string("<stdout>: write failed: ") + std::strerror(errno));
  }
}

void Output::commit() {
  if (file_) {
    file_->commit();
  } else if (std::fflush(stdout) != 0) {
    throw Error(std::string("<stdout>: write failed: ") + std::strerror(errno));
  }
}

bool is_stdout(const std::string& path) { return path == "-"; }

void write_output(const std::string& path, const std::string& text) {
  Output out(path);
  out.write(text);
  out.commit();
}

void refuse_binary_on_terminal(const std::string& path, const std::string& hint) {
  if (path == "-" && ::isatty(1)) throw Error("refusing to write binary data to a terminal: " + hint);
}

}  // namespace shapelaw
