#pragma once
// A tool's output named on its command line: "-" is stdout, anything else a file
// written atomically (lib/util/atomic_file.h), so `tool -o - | next` and `tool -o FILE`
// run the same code.
#include <memory>
#include <string>
#include <string_view>

namespace shapelaw {

class AtomicFile;

class Output {
 public:
  explicit Output(const std::string& path);  // "-" = stdout
  ~Output();  // a file not commit()ted is removed
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Flushes stdout, or fsyncs and renames the file; throws Error on failure.
  void commit();
  bool is_stdout() const { return !file_; }
  const std::string& name() const { return name_; }  // the path, or "<stdout>"

 private:
  std::unique_ptr<AtomicFile> file_;
  std::string name_;
};

bool is_stdout(const std::string& path);  // "-"
// The whole text at once: Output(path), write, commit.
void write_output(const std::string& path, const std::string& text);

// Throws Error when path is "-" and stdout is a terminal: binary tokens on a terminal
// are never what was meant. hint says what to do instead.
void refuse_binary_on_terminal(const std::string& path, const std::string& hint);

}  // namespace shapelaw
