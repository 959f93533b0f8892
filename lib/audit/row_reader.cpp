#include "audit/row_reader.h"

#include "audit/numbers.h"
#include "util/error.h"

namespace shapelaw::audit {

std::optional<std::pair<int, std::string>> RowReader::find(const std::vector<std::string>& names) const {
  for (const auto& name : names) {
    int i = table_.column({name});
    if (i >= 0 && !trim(record_.fields[i]).empty()) return std::make_pair(i, table_.header[i]);
  }
  return std::nullopt;
}

std::optional<std::string> RowReader::text(const std::vector<std::string>& names) const {
  auto f = find(names);
  if (!f) return std::nullopt;
  return trim(record_.fields[f->first]);
}

void RowReader::fail(const std::string& field, const std::string& what) const {
  throw Error(located(table_.path, record_.line, "field '" + field + "': " + what));
}

std::optional<int64_t> RowReader::integer(const std::vector<std::string>& names) const {
  auto f = find(names);
  if (!f) return std::nullopt;
  int64_t v;
  const std::string& raw = record_.fields[f->first];
  if (!parse_int(raw, v)) fail(f->second, "'" + trim(raw) + "' is not an integer");
  return v;
}

int64_t RowReader::required_integer(const std::vector<std::string>& names) const {
  auto v = integer(names);
  if (!v) {
    bool has_column = false;
    for (const auto& n : names) has_column = has_column || table_.column({n}) >= 0;
    fail(names.front(), has_column ? "missing value" : "missing column");
  }
  return *v;
}

std::optional<double> RowReader::number(const std::vector<std::string>& names) const {
  auto f = find(names);
  if (!f) return std::nullopt;
  double v;
  const std::string& raw = record_.fields[f->first];
  if (!parse_double(raw, v)) fail(f->second, "'" + trim(raw) + "' is not a number");
  return v;
}

std::optional<double> RowReader::count(const std::vector<std::string>& names, double scale) const {
  auto f = find(names);
  if (!f) return std::nullopt;
  double v;
  const std::string& raw = record_.fields[f->first];
  if (!parse_count(raw, v, scale))
    fail(f->second, "'" + trim(raw) + "' is not a parameter count (e.g. 175B, 27.5M, 6920000000)");
  return v;
}

std::optional<bool> RowReader::boolean(const std::vector<std::string>& names) const {
  auto f = find(names);
  if (!f) return std::nullopt;
  bool v;
  const std::string& raw = record_.fields[f->first];
  if (!parse_bool(raw, v)) fail(f->second, "'" + trim(raw) + "' is not true/false");
  return v;
}

}  // namespace shapelaw::audit
