#include "corpus/text_import.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "corpus/layout.h"
#include "util/utf8.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {

namespace fs = std::filesystem;

namespace {

struct TextFile {
  std::string path, source;
};

std::vector<TextFile> expand(const std::vector<std::string>& inputs) {
  std::vector<TextFile> files;
  for (const auto& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<TextFile> found;
      std::string name = fs::path(input).lexically_normal().filename().string();
      if (name.empty()) name = fs::path(input).lexically_normal().parent_path().filename().string();
      for (const auto& entry : fs::recursive_directory_iterator(input))
        if (entry.is_regular_file() && entry.path().extension() == ".txt")
          found.push_back({entry.path().string(), name + "/" + fs::relative(entry.path(), input).generic_string()});
      if (found.empty()) throw Error(located(input, 0, "no *.txt documents in this directory"));
      std::sort(found.begin(), found.end(), [](const TextFile& a, const TextFile& b) { return a.path < b.path; });
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input, ec)) {
      files.push_back({input, fs::path(input).filename().string()});
    } else {
      throw Error(located(input, 0, "no such file or directory"));
    }
  }
  return files;
}

// CRs dropped, both ends trimmed; the 1-based line of the first ill-formed byte, if any.
std::string clean_document(const std::string& path, const std::string& raw) {
  std::string text;
  text.reserve(raw.size());
  for (char c : raw)
    if (c != '\r') text += c;
  if (!is_valid_utf8(text)) {
    size_t begin = 0;
    long long line = 1;
    for (size_t end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1, ++line)
      if (!is_valid_utf8(std::string_view(text).substr(begin, end - begin))) break;
    throw Error(located(path, line, "not UTF-8"));
  }
  const char* space = " \t\n\v\f";
  size_t first = text.find_first_not_of(space);
  if (first == std::string::npos) throw Error(located(path, 0, "document is empty"));
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

}  // namespace

TextImportSummary import_text_documents(const std::vector<std::string>& inputs, const std::string& set_name,
                                        const std::string& out_dir) {
  if (set_name.empty()) throw Error("import-text: the set name is empty");
  SplitRecords records;
  long long words = 0;
  for (const auto& file : expand(inputs)) {
    std::string text = clean_document(file.path, read_file(file.path));
    bool in_word = false;
    for (unsigned char c : text) {
      bool space = c == ' ' || c == '\n' || c == '\t' || c == '\v' || c == '\f';
      words += !space && !in_word;
      in_word = !space;
    }
    nlohmann::json record = {{"text", text}, {"meta", {{"redpajama_set_name", set_name}, {"source", file.source}}}};
    records.add(record.dump());
  }
  return write_slimpajama(out_dir, records, words);
}

}  // namespace shapelaw
