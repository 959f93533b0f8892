#pragma once
// The one CSV reader and writer of shapelaw's tables (RFC 4180): quoted fields may hold
// commas, "" escapes and newlines; '#' comment lines and blank lines between records are
// skipped; unquoted fields are trimmed; "\r\n" ends a record like "\n". Every record keeps
// the 1-based line it starts on, so errors can name "file:line: field".
#include <initializer_list>
#include <string>
#include <vector>

namespace shapelaw {

struct CsvRecord {
  long long line = 0;
  std::vector<std::string> fields;
};

struct CsvTable {
  std::string path;
  std::vector<std::string> header;  // trimmed column names as written
  std::vector<CsvRecord> records;
  // Index of a column by any of the given names (case-insensitive); -1 if none.
  int column(std::initializer_list<const char*> names) const;
  int column(const std::vector<std::string>& names) const;
};

struct CsvReadOptions {
  // Keep records whose field count differs from the header's (the caller reports or skips
  // them); by default the first such record is an error.
  bool allow_ragged = false;
};

// `path` names the text in error messages. Throws Error on an unterminated quoted field, an
// empty table (no header line), or (unless allow_ragged) a record of the wrong width.
CsvTable parse_csv(const std::string& text, const std::string& path, const CsvReadOptions& options = {});
CsvTable read_csv(const std::string& path, const CsvReadOptions& options = {});
// "expected N fields as in the header, got M" for a ragged record.
std::string ragged_message(const CsvTable& table, const CsvRecord& record);

// One record of text (no header), by the same rules.
std::vector<std::string> split_csv_line(const std::string& line);

// A field quoted when it holds a comma, quote or line break; a whole row with "\n".
std::string csv_field(const std::string& field);
std::string csv_row(const std::vector<std::string>& fields);

}  // namespace shapelaw
