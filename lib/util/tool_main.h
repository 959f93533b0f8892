#pragma once
// Shared entry point of every tool: runs the body, turns shapelaw::Error and
// CLI11 errors into one line on stderr and a non-zero exit, never a stack dump.
#include <functional>

namespace shapelaw {

// Exit codes: 0 success, 1 runtime/bad-input error, 2 usage error, 130 interrupted.
int tool_main(const char* tool_name, const std::function<int()>& body);

}  // namespace shapelaw
