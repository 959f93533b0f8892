#pragma once
// The one way every tool parses its command line (CLI11), so that a usage error reads
// the same everywhere: one line `tool: error: reason (see --help)` and exit status 2
// (util/tool_main.h's codes), where CLI11's own exit would print two lines and return
// its internal codes (104-109). Header-only: only tools/ include CLI11.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <CLI/CLI.hpp>

namespace shapelaw {

// For an option whose output is a directory: '-' (stdout elsewhere) is refused, where it
// would have made a directory named "-".
inline CLI::Validator directory_output() {
  return CLI::Validator(
      [](std::string& value) {
        return value == "-" ? std::string("'-' is stdout, but this output is a directory: give its path")
                            : std::string();
      },
      "DIR");
}

// A number > 0, or >= 0: CLI11's PositiveNumber and NonNegativeNumber say "not in range
// 0.000000 to 1797693134862315708...", the largest double in its 309 digits.
inline CLI::Validator number_at_least(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& value) {
        double x = 0;
        try {
          size_t used = 0;
          x = std::stod(value, &used);
          if (used != value.size()) throw std::invalid_argument(value);
        } catch (const std::exception&) {
          return "'" + value + "' is not a number";
        }
        if (zero_allowed ? x >= 0 : x > 0) return std::string();
        return std::string(zero_allowed ? "must be >= 0" : "must be > 0") + " (got " + value + ")";
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}
inline CLI::Validator positive_number() { return number_at_least(false); }
inline CLI::Validator non_negative_number() { return number_at_least(true); }

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
