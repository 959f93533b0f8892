#include "util/output.h"

#include <cstdio>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {

bool is_stdout(const std::string& path) { return path == "-"; }

void write_output(const std::string& path, const std::string& text) {
  if (!is_stdout(path)) {
    write_file_atomic(path, text);
    return;
  }
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
    throw Error("cannot write to stdout");
}

}  // namespace shapelaw
