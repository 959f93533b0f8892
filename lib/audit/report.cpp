#include "audit/report.h"

#include <algorithm>

#include "util/csv.h"
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
  for (const auto& w : r.warnings) out += "**Warning:** " + w + "\n\n";
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

// One CSV cell per number: a row's JSON is flattened, objects into parent_child columns,
// a [lo, hi] interval under KEY_ci95 into KEY_lo and KEY_hi, other arrays ';'-joined, null
// empty; columns in order of first appearance over the rows.
void flatten(const nlohmann::ordered_json& v, const std::string& key, nlohmann::ordered_json& out) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it) flatten(it.value(), key.empty() ? it.key() : key + "_" + it.key(), out);
  } else if (v.is_array()) {
    const std::string ci = "_ci95";
    if (v.size() == 2 && v[0].is_number() && v[1].is_number() && key.size() > ci.size() &&
        key.compare(key.size() - ci.size(), ci.size(), ci) == 0) {
      const std::string stem = key.substr(0, key.size() - ci.size());
      out[stem + "_lo"] = v[0];
      out[stem + "_hi"] = v[1];
    } else {
      std::string joined;
      for (const auto& x : v) joined += (joined.empty() ? "" : ";") + (x.is_string() ? x.get<std::string>() : x.dump());
      out[key] = joined;
    }
  } else {
    out[key] = v;
  }
}

std::string cell(const nlohmann::ordered_json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();  // numbers round-trip; booleans true/false
}

std::string csv(const Report& r) {
  std::string out;
  bool several = r.tables.size() > 1;
  for (size_t k = 0; k < r.tables.size(); ++k) {
    const auto& t = r.tables[k];
    if (several) out += (k ? "\n# " : "# ") + t.id + "\n";
    std::vector<nlohmann::ordered_json> flat;
    std::vector<std::string> columns;
    for (const auto& row : t.rows) {
      nlohmann::ordered_json f = nlohmann::ordered_json::object();
      flatten(row, "", f);
      for (auto it = f.begin(); it != f.end(); ++it)
        if (std::find(columns.begin(), columns.end(), it.key()) == columns.end()) columns.push_back(it.key());
      flat.push_back(std::move(f));
    }
    out += csv_row(columns);
    for (const auto& f : flat) {
      std::vector<std::string> cells;
      for (const auto& c : columns) cells.push_back(f.contains(c) ? cell(f[c]) : "");
      out += csv_row(cells);
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
  j["warnings"] = r.warnings;
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
