#pragma once
// The audit's output: one or more tables (with notes) rendered as markdown (default),
// CSV or JSON. Every table row is kept twice: display text for markdown/CSV and typed
// values for JSON.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shapelaw::audit {

enum class Format { markdown, csv, json };
bool parse_format(const std::string& text, Format& out);

struct ReportTable {
  std::string id, title;
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> cells;
  std::vector<nlohmann::ordered_json> rows;
  std::vector<std::string> notes;
  void add(std::vector<std::string> row_cells, nlohmann::ordered_json row_json);
};

struct Report {
  std::string kind;                // "audit", "check-table", "paper", "laws"
  std::vector<std::string> header; // lines printed before the tables (law, thresholds, ...)
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  std::vector<ReportTable> tables;
  std::vector<std::string> errors; // rows skipped under --keep-going
  std::vector<std::string> warnings;  // caveats every format carries (the tool also prints them on stderr)
};

// markdown: "# kind" heading, header lines, warnings, a "## title" section per table with
// notes as bullets; csv: the tables only, one column per number of the JSON rows (objects
// flattened to parent_child, [lo, hi] intervals KEY_ci95 to KEY_lo, KEY_hi; a "# id" line
// before each table when there are several); json: {"format": "shapelaw.audit", "version": 1,
// "kind", "meta", "warnings", "tables": [...], "errors"}.
std::string render(const Report& report, Format format);

}  // namespace shapelaw::audit
