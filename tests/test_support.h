#pragma once
// Helpers shared by the test executables: scratch directories and running tools.
#include <string>
#include <vector>

namespace shapelaw::test {

// A fresh directory under $TMPDIR, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
 private:
  std::string path_;
};

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together (run_stdout: stdout only)
  std::string errors;  // run_stdout: stderr, kept apart so that stdout parses
};

// Runs a shell command line; tool names resolve through bin().
// Runs a shell command line, stdout and stderr together. The commands inherit the CPU
// library settings that train and probe-grads would otherwise re-execute themselves to
// get (util/cpu_runtime.h: the fixed kernel set's OPENBLAS_CORETYPE and
// ATEN_CPU_CAPABILITY on an AVX2+FMA CPU, OMP_WAIT_POLICY=PASSIVE), set once here unless
// the environment gives them: the same kernels and bits, half the start-up of each of
// the suite's hundreds of runs. A test of the re-execution itself sets its own values;
// one that needs this CPU's native libraries prefixes native_environment().
CommandResult run(const std::string& command_line);
// The same with stdout alone in `output` and stderr in `errors` (for a tool's JSON or CSV on
// stdout; a test shows `errors` on failure instead of sending them to /dev/null).
CommandResult run_stdout(const std::string& command_line);
// REQUIRE_OK(command line): run() it; a non-zero exit fails the test (Catch's REQUIRE, at
// the caller's line) showing the command and its output, which a bare
// REQUIRE(run(...).exit_code == 0) left out. The result is not kept: a test that reads the
// output runs it itself.
#define REQUIRE_OK(command_line)                                                          \
  do {                                                                                    \
    const std::string require_ok_command_ = (command_line);                              \
    const auto require_ok_result_ = ::shapelaw::test::run(require_ok_command_);          \
    INFO("$ " << require_ok_command_ << "\n" << require_ok_result_.output);               \
    REQUIRE(require_ok_result_.exit_code == 0);                                          \
  } while (0)
// "env -u ..." that takes those settings away again, for a --kernels native run.
std::string native_environment();
// Absolute path of a built tool, e.g. bin("shard").
std::string bin(const std::string& tool);
// The running test binary itself (/proc/<pid>/exe), to run its own hidden or filtered cases.
std::string this_test_binary();
// Absolute path inside the source tree, e.g. source("examples/paper/table9.csv").
std::string source(const std::string& relative);

// Writes `documents` JSON lines of seeded pseudo-English text ({"text": ..., "meta":
// {"redpajama_set_name": "Synthetic"}}) to path; returns the texts.
std::vector<std::string> write_synthetic_corpus(const std::string& path, int documents, unsigned seed = 1);
void write_text(const std::string& path, const std::string& content);
// A loopback TCP port that nothing listens on right now (the kernel's choice, then
// released): for data-parallel tests that run at the same time as others.
int free_loopback_port();
bool loopback_port_is_free(int port);  // nothing listens there now
std::string read_text(const std::string& path);
// Lines of text that start with prefix.
int count_lines_starting(const std::string& text, const std::string& prefix);

}  // namespace shapelaw::test
