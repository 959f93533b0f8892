#include "test_support.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "util/cpu_runtime.h"

namespace shapelaw::test {

namespace {

// Binds a loopback socket to `port` (0: any free one) and closes it: the port it got, or -1.
int bind_loopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(uint16_t(port));
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : -1;
}

}  // namespace

int free_loopback_port() {
  const int port = bind_loopback(0);
  if (port < 0) throw std::runtime_error("no free loopback port");
  return port;
}

bool loopback_port_is_free(int port) { return bind_loopback(port) == port; }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base ? base : "/tmp") + "/shapelaw-test-XXXXXX";
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {
bool preset_tool_environment() {
  for (const auto& [name, value] : fixed_library_environment()) ::setenv(name.c_str(), value.c_str(), 0);
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  return true;
}
}  // namespace

std::string native_environment() { return "env -u OPENBLAS_CORETYPE -u ATEN_CPU_CAPABILITY -u OMP_WAIT_POLICY "; }

namespace {
CommandResult run_redirected(const std::string& command_line, const std::string& stderr_to) {
  static const bool preset = preset_tool_environment();
  (void)preset;
  std::string full = "(" + command_line + ") 2>" + stderr_to;
  std::FILE* pipe = ::popen(full.c_str(), "r");
  if (!pipe) throw std::runtime_error("popen failed: " + command_line);
  std::string output;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) output.append(chunk.data(), n);
  int status = ::pclose(pipe);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {code, output, ""};
}
}  // namespace

CommandResult run(const std::string& command_line) { return run_redirected(command_line, "&1"); }

CommandResult run_stdout(const std::string& command_line) {
  TempDir dir;
  const std::string errors = dir.path() + "/stderr";
  CommandResult r = run_redirected(command_line, "'" + errors + "'");
  std::ifstream in(errors, std::ios::binary);
  r.errors.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

std::string bin(const std::string& tool) { return std::string(SHAPELAW_BIN_DIR) + "/" + tool; }
std::string this_test_binary() { return "/proc/" + std::to_string(::getpid()) + "/exe"; }
std::string source(const std::string& relative) {
  return std::string(SHAPELAW_SOURCE_DIR) + "/" + relative;
}

std::vector<std::string> write_synthetic_corpus(const std::string& path, int documents, unsigned seed) {
  static const char* const words[] = {
      "the", "jury", "said", "that", "election", "of", "city", "county", "and", "a", "report", "was",
      "in", "it", "to", "for", "on", "new", "state", "law", "tax", "school", "board", "members", "would",
      "be", "has", "been", "more", "than", "year", "government", "house", "president", "federal", "program"};
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, int(sizeof words / sizeof *words) - 1), length(5, 60), sentences(1, 12);
  std::vector<std::string> texts;
  std::ofstream out(path, std::ios::binary);
  for (int d = 0; d < documents; ++d) {
    std::string text;
    for (int s = sentences(rng); s > 0; --s) {
      for (int w = length(rng); w > 0; --w) text += std::string(words[pick(rng)]) + (w > 1 ? " " : ".");
      if (s > 1) text += "\n";
    }
    text += " d" + std::to_string(d);  // every document distinct
    texts.push_back(text);
    std::string escaped;
    for (char c : text) escaped += (c == '\n') ? std::string("\\n") : std::string(1, c);
    out << "{\"text\": \"" << escaped << "\", \"meta\": {\"redpajama_set_name\": \"Synthetic\"}}\n";
  }
  return texts;
}

void write_text(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

int count_lines_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) n += line.rfind(prefix, 0) == 0;
  return n;
}

}  // namespace shapelaw::test
