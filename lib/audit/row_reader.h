#pragma once
// Typed access to one CSV record by column name, with errors of the form
// "file:line: field 'width': 'abc' is not an integer".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/csv.h"

namespace shapelaw::audit {

class RowReader {
 public:
  RowReader(const CsvTable& table, const CsvRecord& record) : table_(table), record_(record) {}
  // The raw text of the first present, non-empty column among `names`.
  std::optional<std::string> text(const std::vector<std::string>& names) const;
  std::optional<int64_t> integer(const std::vector<std::string>& names) const;  // throws if not an integer
  int64_t required_integer(const std::vector<std::string>& names) const;        // throws if missing
  std::optional<double> number(const std::vector<std::string>& names) const;
  std::optional<double> count(const std::vector<std::string>& names, double scale = 1.0) const;
  std::optional<bool> boolean(const std::vector<std::string>& names) const;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const;
  long long line() const { return record_.line; }
  const std::string& path() const { return table_.path; }

 private:
  // Column index and name of the first present, non-empty column.
  std::optional<std::pair<int, std::string>> find(const std::vector<std::string>& names) const;
  const CsvTable& table_;
  const CsvRecord& record_;
};

}  // namespace shapelaw::audit
