#include "util/error.h"

namespace shapelaw {

std::string located(const std::string& path, long long line, const std::string& what) {
  if (line > 0) return path + ":" + std::to_string(line) + ": " + what;
  return path + ": " + what;
}

}  // namespace shapelaw
