#pragma once
// The one way every tool parses its command line (CLI11), so that a usage error reads
// the same everywhere: one line `tool: error: reason (see --help)` and exit status 2
// (util/tool_main.h's codes), where CLI11's own exit would print two lines and return
// its internal codes (104-109). Header-only: only tools/ include CLI11.
#include <cstdio>

#include <CLI/CLI.hpp>

namespace shapelaw {

// Returns -1 when the tool goes on; otherwise the exit status: 0 after --help or
// --version (printed), 2 after a usage error (printed as one line).
inline int parse_command_line(CLI::App& app, int argc, const char* const* argv, const char* tool_name) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help, --version
    std::fprintf(stderr, "%s: error: %s (see --help)\n", tool_name, e.what());
    return 2;
  }
  return -1;
}

}  // namespace shapelaw
