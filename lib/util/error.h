#pragma once
// One exception type for every user-facing failure: the message names the file,
// line or field at fault, and tools turn it into "tool: message" plus exit 1.
#include <stdexcept>
#include <string>

namespace shapelaw {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "path:line: what" (line omitted when 0), the form every tool uses for bad input.
std::string located(const std::string& path, long long line, const std::string& what);

}  // namespace shapelaw
