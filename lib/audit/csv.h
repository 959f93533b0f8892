#pragma once
// A small RFC-4180 CSV reader for the audit's input tables: quoted fields, "" escapes,
// '#' comment lines and blank lines skipped; every record keeps its 1-based line number
// so errors can name "file:line: field".
#include <map>
#include <string>
#include <vector>

namespace shapelaw::audit {

struct CsvRecord {
  long long line = 0;
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string path;
  std::vector<std::string> header;       // trimmed column names as written
  std::vector<CsvRecord> records;
  // Index of a column by any of the given names (case-insensitive); -1 if none.
  int column(std::initializer_list<const char*> names) const;
  int column(const std::vector<std::string>& names) const;
};

// Parses CSV text; `path` is used in error messages only. Throws Error on an
// unterminated quote or a record whose field count differs from the header.
CsvTable parse_csv(const std::string& text, const std::string& path);
CsvTable read_csv(const std::string& path);

std::string csv_escape(const std::string& field);

}  // namespace shapelaw::audit
