#pragma once
// Documents from SlimPajama-layout JSON lines: one object per line with a "text"
// string (and "meta"). Reads plain .jsonl, .jsonl.zst, directories of them (sorted,
// recursive) and stdin ("-") through one code path.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace shapelaw {

struct Document {
  std::string text;
  std::string source;  // file it came from
  long long line = 0;  // 1-based line in that file
};

struct DocumentReaderOptions {
  bool skip_bad = false;        // count and skip malformed lines instead of failing
  std::string text_field = "text";
};

// Expands directories into their *.jsonl / *.jsonl.zst files in sorted order.
std::vector<std::string> expand_corpus_inputs(const std::vector<std::string>& inputs);

class ByteSource;
class LineReader;

class DocumentReader {
 public:
  DocumentReader(std::vector<std::string> inputs, DocumentReaderOptions options = {});
  ~DocumentReader();
  // Next document; false when all inputs are exhausted. Throws Error naming the file
  // and line for bad JSON, a missing/non-string/empty text field or invalid UTF-8,
  // unless skip_bad is set.
  bool next(Document& document);
  uint64_t documents() const { return documents_; }
  uint64_t skipped() const { return skipped_; }
  uint64_t raw_bytes_read() const;      // compressed bytes consumed so far, all files
  uint64_t total_raw_bytes() const { return total_raw_bytes_; }  // 0 when unknown (stdin)

 private:
  bool open_next_file();
  std::vector<std::string> inputs_;
  DocumentReaderOptions options_;
  size_t next_input_ = 0;
  std::unique_ptr<ByteSource> source_;
  std::unique_ptr<LineReader> lines_;
  std::string line_;
  uint64_t documents_ = 0, skipped_ = 0, finished_bytes_ = 0, total_raw_bytes_ = 0;
};

}  // namespace shapelaw
