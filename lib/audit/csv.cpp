#include "audit/csv.h"

#include <algorithm>
#include <cctype>

#include "audit/numbers.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::audit {

int CsvTable::column(std::initializer_list<const char*> names) const {
  return column(std::vector<std::string>(names.begin(), names.end()));
}

int CsvTable::column(const std::vector<std::string>& names) const {
  for (const auto& name : names)
    for (size_t i = 0; i < header.size(); ++i)
      if (lower(header[i]) == lower(name)) return static_cast<int>(i);
  return -1;
}

CsvTable parse_csv(const std::string& text, const std::string& path) {
  CsvTable table;
  table.path = path;
  size_t i = 0, n = text.size();
  long long line = 1;
  bool have_header = false;
  while (i < n) {
    // Skip blank and comment lines at record starts.
    size_t eol = text.find('\n', i);
    if (eol == std::string::npos) eol = n;
    std::string raw = trim(text.substr(i, eol - i));
    if (raw.empty() || raw[0] == '#') {
      i = eol + 1;
      ++line;
      continue;
    }
    CsvRecord record;
    record.line = line;
    std::string field;
    bool quoted = false, was_quoted = false;
    for (;;) {
      if (i >= n) {
        if (quoted) throw Error(located(path, record.line, "unterminated quoted field"));
        record.fields.push_back(was_quoted ? field : trim(field));
        break;
      }
      char c = text[i];
      if (quoted) {
        if (c == '"') {
          if (i + 1 < n && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          quoted = false;
          ++i;
          continue;
        }
        if (c == '\n') ++line;
        field += c;
        ++i;
        continue;
      }
      if (c == '"' && trim(field).empty()) {
        quoted = true;
        was_quoted = true;
        field.clear();
        ++i;
        continue;
      }
      if (c == ',') {
        record.fields.push_back(was_quoted ? field : trim(field));
        field.clear();
        was_quoted = false;
        ++i;
        continue;
      }
      if (c == '\n' || c == '\r') {
        record.fields.push_back(was_quoted ? field : trim(field));
        if (c == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
        ++i;
        ++line;
        break;
      }
      field += c;
      ++i;
    }
    if (!have_header) {
      table.header = record.fields;
      have_header = true;
      continue;
    }
    if (record.fields.size() != table.header.size())
      throw Error(located(path, record.line,
                          "expected " + std::to_string(table.header.size()) + " fields (as in the header), found " +
                              std::to_string(record.fields.size())));
    table.records.push_back(std::move(record));
  }
  if (!have_header) throw Error(located(path, 0, "empty table (no header line)"));
  return table;
}

CsvTable read_csv(const std::string& path) { return parse_csv(read_file(path), path); }

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace shapelaw::audit
