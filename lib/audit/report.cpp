#include "audit/report.h"

#include "audit/csv.h"
#include "audit/numbers.h"

namespace shapelaw::audit {

bool parse_format(const std::string& text, Format& out) {
  std::string t = lower(trim(text));
  if (t == "markdown" || t == "md") return out = Format::markdown, true;
  if (t == "csv") return out = Format::csv, true;
  if (t == "json") return out = Format::json, true;
  return false;
}

void ReportTable::add(std::vector<std::string> row_cells, nlohmann::ordered_json row_json) {
  cells.push_back(std::move(row_cells));
  rows.push_back(std::move(row_json));
}

namespace {

std::string md_cell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string markdown(const Report& r) {
  std::string out = "# audit " + r.kind + "\n\n";
  for (const auto& line : r.header) out += line + "\n";
  if (!r.header.empty()) out += "\n";
  for (const auto& t : r.tables) {
    out += "## " + t.title + "\n\n";
    if (t.cells.empty()) {
      out += "(no rows)\n\n";
    } else {
      out += "|";
      for (const auto& c : t.columns) out += " " + md_cell(c) + " |";
      out += "\n|";
      for (size_t i = 0; i < t.columns.size(); ++i) out += " --- |";
      out += "\n";
      for (const auto& row : t.cells) {
        out += "|";
        for (const auto& c : row) out += " " + md_cell(c) + " |";
        out += "\n";
      }
      out += "\n";
    }
    for (const auto& n : t.notes) out += "- " + n + "\n";
    if (!t.notes.empty()) out += "\n";
  }
  if (!r.errors.empty()) {
    out += "## Skipped rows (--keep-going)\n\n";
    for (const auto& e : r.errors) out += "- " + e + "\n";
    out += "\n";
  }
  return out;
}

std::string csv(const Report& r) {
  std::string out;
  bool several = r.tables.size() > 1;
  for (size_t k = 0; k < r.tables.size(); ++k) {
    const auto& t = r.tables[k];
    if (several) out += (k ? "\n# " : "# ") + t.id + "\n";
    for (size_t i = 0; i < t.columns.size(); ++i) out += (i ? "," : "") + csv_escape(t.columns[i]);
    out += "\n";
    for (const auto& row : t.cells) {
      for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + csv_escape(row[i]);
      out += "\n";
    }
  }
  return out;
}

std::string json(const Report& r) {
  nlohmann::ordered_json j;
  j["format"] = "shapelaw.audit";
  j["version"] = 1;
  j["kind"] = r.kind;
  j["meta"] = r.meta;
  j["tables"] = nlohmann::ordered_json::array();
  for (const auto& t : r.tables) {
    nlohmann::ordered_json tj;
    tj["id"] = t.id;
    tj["title"] = t.title;
    tj["columns"] = t.columns;
    tj["rows"] = t.rows;
    tj["notes"] = t.notes;
    j["tables"].push_back(tj);
  }
  j["errors"] = r.errors;
  return j.dump(2) + "\n";
}

}  // namespace

std::string render(const Report& report, Format format) {
  switch (format) {
    case Format::markdown: return markdown(report);
    case Format::csv: return csv(report);
    case Format::json: return json(report);
  }
  return "";
}

}  // namespace shapelaw::audit
