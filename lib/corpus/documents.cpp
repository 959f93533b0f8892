#include "corpus/documents.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "util/byte_source.h"
#include "util/error.h"

namespace shapelaw {

namespace fs = std::filesystem;

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::vector<std::string> expand_corpus_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const auto& input : inputs) {
    if (input == "-") {
      files.push_back(input);
    } else if (fs::is_directory(input)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::recursive_directory_iterator(input)) {
        std::string p = entry.path().string();
        if (entry.is_regular_file() && (ends_with(p, ".jsonl") || ends_with(p, ".jsonl.zst"))) found.push_back(p);
      }
      if (found.empty()) throw Error(located(input, 0, "directory holds no .jsonl or .jsonl.zst files"));
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(input)) {
      files.push_back(input);
    } else {
      throw Error(located(input, 0, "no such file or directory"));
    }
  }
  return files;
}

DocumentReader::DocumentReader(std::vector<std::string> inputs, DocumentReaderOptions options)
    : inputs_(expand_corpus_inputs(inputs)), options_(std::move(options)) {
  for (const auto& file : inputs_) {
    if (file == "-") { total_raw_bytes_ = 0; break; }
    total_raw_bytes_ += fs::file_size(file);
  }
}

DocumentReader::~DocumentReader() = default;

uint64_t DocumentReader::raw_bytes_read() const {
  return finished_bytes_ + (source_ ? source_->raw_bytes_read() : 0);
}

bool DocumentReader::open_next_file() {
  if (source_) finished_bytes_ += source_->raw_bytes_read();
  lines_.reset();
  source_.reset();
  if (next_input_ == inputs_.size()) return false;
  source_ = std::make_unique<ByteSource>(inputs_[next_input_++]);
  lines_ = std::make_unique<LineReader>(*source_);
  return true;
}

bool DocumentReader::next(Document& document) {
  for (;;) {
    if (!lines_ && !open_next_file()) return false;
    if (!lines_->next(line_)) {
      if (!open_next_file()) return false;
      continue;
    }
    if (line_.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank line
    std::string problem;
    try {
      auto object = nlohmann::json::parse(line_);
      auto it = object.is_object() ? object.find(options_.text_field) : object.end();
      if (!object.is_object()) problem = "line is not a JSON object";
      else if (it == object.end()) problem = "missing field '" + options_.text_field + "'";
      else if (!it->is_string()) problem = "field '" + options_.text_field + "' is not a string";
      else if (it->get_ref<const std::string&>().empty()) problem = "empty document (field '" + options_.text_field + "' is \"\")";
      else document.text = std::move(it->get_ref<std::string&>());
    } catch (const nlohmann::json::exception& e) {
      // nlohmann's lexer also rejects ill-formed UTF-8 here.
      problem = std::string("malformed JSON: ") + e.what();
    }
    if (!problem.empty()) {
      if (options_.skip_bad) { ++skipped_; continue; }
      throw Error(located(source_->path(), lines_->line_number(), problem + " (use --skip-bad to skip such lines)"));
    }
    document.source = source_->path();
    document.line = lines_->line_number();
    ++documents_;
    return true;
  }
}

}  // namespace shapelaw
