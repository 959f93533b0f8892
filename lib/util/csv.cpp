#include "util/csv.h"

#include <algorithm>
#include <cctype>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace shapelaw {
namespace {

// Parses one record starting at text[i]; advances i past its line end and line by the
// lines it spans.
CsvRecord parse_record(const std::string& text, size_t& i, long long& line, const std::string& path) {
  const size_t n = text.size();
  CsvRecord record;
  record.line = line;
  std::string field;
  bool quoted = false, was_quoted = false;
  auto push = [&] {
    record.fields.push_back(was_quoted ? field : trim(field));
    field.clear();
    was_quoted = false;
  };
  for (;;) {
    if (i >= n) {
      if (quoted) throw Error(located(path, record.line, "unterminated quoted field"));
      push();
      return record;
    }
    const char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < n && text[i + 1] == '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
      ++i;
      continue;
    }
    if (c == '"' && trim(field).empty()) {
      quoted = was_quoted = true;
      field.clear();
    } else if (c == ',') {
      push();
    } else if (was_quoted && (c == ' ' || c == '\t')) {
      // blanks between a closing quote and the separator
    } else if (c == '\n' || c == '\r') {
      push();
      if (c == '\r' && i + 1 < n && text[i + 1] == '\n') ++i;
      ++i;
      ++line;
      return record;
    } else {
      field += c;
    }
    ++i;
  }
}

}  // namespace

int CsvTable::column(std::initializer_list<const char*> names) const {
  return column(std::vector<std::string>(names.begin(), names.end()));
}

int CsvTable::column(const std::vector<std::string>& names) const {
  for (const auto& name : names)
    for (size_t i = 0; i < header.size(); ++i)
      if (lower(header[i]) == lower(name)) return static_cast<int>(i);
  return -1;
}

std::string ragged_message(const CsvTable& table, const CsvRecord& record) {
  return "expected " + std::to_string(table.header.size()) + " fields as in the header, got " +
         std::to_string(record.fields.size());
}

CsvTable parse_csv(const std::string& text, const std::string& path, const CsvReadOptions& options) {
  CsvTable table;
  table.path = path;
  size_t i = 0;
  const size_t n = text.size();
  long long line = 1;
  bool have_header = false;
  while (i < n) {
    size_t eol = text.find('\n', i);
    if (eol == std::string::npos) eol = n;
    const std::string raw = trim(text.substr(i, eol - i));
    if (raw.empty() || raw[0] == '#') {  // blank and comment lines between records
      i = eol + 1;
      ++line;
      continue;
    }
    CsvRecord record = parse_record(text, i, line, path);
    if (!have_header) {
      table.header = std::move(record.fields);
      have_header = true;
      continue;
    }
    if (record.fields.size() != table.header.size() && !options.allow_ragged)
      throw Error(located(path, record.line, ragged_message(table, record)));
    table.records.push_back(std::move(record));
  }
  if (!have_header) throw Error(located(path, 0, "empty CSV file (no header line)"));
  return table;
}

CsvTable read_csv(const std::string& path, const CsvReadOptions& options) {
  return parse_csv(read_file(path), path, options);
}

std::vector<std::string> split_csv_line(const std::string& line) {
  size_t i = 0;
  long long lineno = 1;
  return parse_record(line, i, lineno, "<line>").fields;
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
  return out + "\n";
}

}  // namespace shapelaw
