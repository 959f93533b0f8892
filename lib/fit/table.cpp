#include "util/csv_line.h"
#include "fit/table.h"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::fit {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Default source names for each canonical field, first match wins.
const std::map<std::string, std::vector<std::string>>& default_aliases() {
  static const std::map<std::string, std::vector<std::string>> aliases = {
      {"run", {"run", "run_id", "name", "id"}},
      {"group", {"group"}},
      {"tokenizer", {"tokenizer", "tokenizer_sha256"}},
      {"depth", {"depth", "D", "n_layers", "layers"}},
      {"width", {"width", "W", "d_model", "hidden"}},
      {"loss", {"loss", "final_val_loss", "val_loss", "L"}},
      {"tau", {"tau"}},
      {"loss_se", {"loss_se", "se"}},
      {"params", {"params", "params.total", "params_total", "n_params", "N"}},
      {"params_nonembedding", {"params_nonembedding", "params.non_embedding", "non_embedding"}},
      {"tokens", {"tokens", "T"}},
      {"compute", {"compute", "compute_flops", "C"}},
  };
  return aliases;
}

bool parse_number(const std::string& text, double& out) {
  std::string t = text;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  size_t start = 0;
  while (start < t.size() && std::isspace(static_cast<unsigned char>(t[start]))) ++start;
  t = t.substr(start);
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v)) return false;
  out = v;
  return true;
}

// A record seen as key -> raw text (CSV) or a JSON object; one accessor for both.
struct Record {
  const std::map<std::string, std::string>* csv = nullptr;
  const json* obj = nullptr;

  // found: whether the key exists (and is not empty/null); text for messages.
  bool get(const std::string& key, std::string& text, double& number, bool& is_number) const {
    if (csv) {
      auto it = csv->find(key);
      if (it == csv->end()) return false;
      text = it->second;
      std::string trimmed = text;
      trimmed.erase(0, trimmed.find_first_not_of(" \t"));
      if (trimmed.empty()) return false;
      is_number = parse_number(text, number);
      return true;
    }
    const json* node = obj;
    std::stringstream path(key);
    std::string part;
    while (std::getline(path, part, '.')) {
      if (!node->is_object() || !node->contains(part)) {
        // a key with literal dots
        if (obj->is_object() && obj->contains(key)) { node = &(*obj)[key]; break; }
        return false;
      }
      node = &(*node)[part];
    }
    if (node->is_null() || node->is_object() || node->is_array()) return false;
    if (node->is_number()) {
      number = node->get<double>();
      is_number = std::isfinite(number);
      text = node->dump();
    } else if (node->is_string()) {
      text = node->get<std::string>();
      is_number = parse_number(text, number);
    } else {
      text = node->dump();
      is_number = false;
    }
    return true;
  }
};

struct RowError {
  std::string message;
};

// Fills one Row from a record; returns an error message or empty.
std::string fill_row(const Record& rec, const LoadOptions& opt, Row& row) {
  auto lookup = [&](const std::string& field, std::string& text, double& value, bool& is_num,
                    std::string& used) -> bool {
    auto explicit_it = opt.columns.find(field);
    if (explicit_it != opt.columns.end()) {
      used = explicit_it->second.column;
      if (!rec.get(used, text, value, is_num)) return false;
      value *= explicit_it->second.scale;
      return true;
    }
    for (const auto& name : default_aliases().at(field)) {
      if (rec.get(name, text, value, is_num)) { used = name; return true; }
    }
    used = default_aliases().at(field).front();
    return false;
  };
  std::string response = opt.tau_table ? "tau" : "loss";
  for (const std::string field : {"depth", "width", response.c_str()}) {
    std::string text, used;
    double v = 0;
    bool is_num = false;
    if (!lookup(field, text, v, is_num, used))
      return "missing required field '" + field + "' (column '" + used + "')";
    if (!is_num) return "field '" + field + "' (column '" + used + "') is not a number: '" + text + "'";
    if (!(v > 0)) return "field '" + field + "' (column '" + used + "') must be > 0, got " + text;
    if (field == "depth") row.depth = v;
    else if (field == "width") row.width = v;
    else row.loss = v;
  }
  struct Opt { const char* field; double* dst; };
  for (Opt o : {Opt{"loss_se", &row.loss_se}, Opt{"params", &row.params},
                Opt{"params_nonembedding", &row.params_nonemb}, Opt{"tokens", &row.tokens},
                Opt{"compute", &row.compute}}) {
    std::string text, used;
    double v = 0;
    bool is_num = false;
    if (!lookup(o.field, text, v, is_num, used)) continue;
    if (!is_num) return std::string("field '") + o.field + "' (column '" + used + "') is not a number: '" + text + "'";
    if (!(v > 0) && std::string(o.field) != "loss_se")
      return std::string("field '") + o.field + "' (column '" + used + "') must be > 0, got " + text;
    *o.dst = v;
  }
  for (auto [field, dst] : {std::pair<const char*, std::string*>{"run", &row.run}, {"group", &row.group},
                             {"tokenizer", &row.tokenizer}}) {
    std::string text, used;
    double v;
    bool is_num;
    if (lookup(field, text, v, is_num, used)) *dst = text;
  }
  return {};
}

void add_row(LoadResult& result, const LoadOptions& opt, const Record& rec, const std::string& path,
             long long line) {
  Row row;
  row.source = path;
  row.line = line;
  std::string err = fill_row(rec, opt, row);
  if (!err.empty()) {
    std::string msg = located(path, line, err);
    if (!opt.skip_bad_rows) throw Error(msg + " (use --skip-bad-rows to skip such rows)");
    result.warnings.push_back("skipped " + msg);
    return;
  }
  if (row.run.empty()) row.run = fs::path(path).filename().string() + ":" + std::to_string(line);
  result.rows.push_back(row);
}

void load_csv(const std::string& path, const LoadOptions& opt, LoadResult& result) {
  std::ifstream in(path);
  if (!in) throw Error(located(path, 0, "cannot open"));
  std::string line;
  long long lineno = 0;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto fields = split_csv_line(line);
    if (header.empty()) {
      header = fields;
      for (auto& h : header) {
        h.erase(0, h.find_first_not_of(" \t"));
        while (!h.empty() && std::isspace(static_cast<unsigned char>(h.back()))) h.pop_back();
      }
      continue;
    }
    if (fields.size() != header.size()) {
      std::string msg = located(path, lineno, "expected " + std::to_string(header.size()) +
                                                  " fields as in the header, got " +
                                                  std::to_string(fields.size()));
      if (!opt.skip_bad_rows) throw Error(msg + " (use --skip-bad-rows to skip such rows)");
      result.warnings.push_back("skipped " + msg);
      continue;
    }
    std::map<std::string, std::string> rec;
    for (size_t i = 0; i < header.size(); ++i) rec[header[i]] = fields[i];
    add_row(result, opt, Record{&rec, nullptr}, path, lineno);
  }
  if (header.empty()) throw Error(located(path, 0, "empty CSV file (no header)"));
}

void load_jsonl(const std::string& path, const LoadOptions& opt, LoadResult& result) {
  std::ifstream in(path);
  if (!in) throw Error(located(path, 0, "cannot open"));
  std::string line;
  long long lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json obj;
    try {
      obj = json::parse(line);
    } catch (const json::exception& e) {
      std::string msg = located(path, lineno, std::string("not valid JSON: ") + e.what());
      if (!opt.skip_bad_rows) throw Error(msg);
      result.warnings.push_back("skipped " + msg);
      continue;
    }
    if (!obj.is_object()) {
      std::string msg = located(path, lineno, "expected a JSON object per line");
      if (!opt.skip_bad_rows) throw Error(msg);
      result.warnings.push_back("skipped " + msg);
      continue;
    }
    add_row(result, opt, Record{nullptr, &obj}, path, lineno);
  }
}

void load_summary(const std::string& path, const LoadOptions& opt, LoadResult& result) {
  json obj;
  try {
    obj = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(located(path, 0, std::string("not valid JSON: ") + e.what()));
  }
  if (!obj.is_object()) throw Error(located(path, 0, "expected a JSON object"));
  if (obj.contains("format")) {
    if (obj["format"] != "shapelaw.summary")
      throw Error(located(path, 0, "format is " + obj["format"].dump() +
                                       ", expected \"shapelaw.summary\""));
    if (obj.contains("version") && obj["version"].is_number() && obj["version"].get<double>() >= 2)
      throw Error(located(path, 0, "summary version " + obj["version"].dump() +
                                       " is newer than this fit-law understands (1)"));
  }
  add_row(result, opt, Record{nullptr, &obj}, path, 0);
}

// Rows that name their tokenizer must all name the same one: a loss in nats per token
// depends on what a token is (the same corpus and settings give a different tokenizer
// under another sentencepiece version, e.g. Debian 12's 0.1.97 and Debian 13's 0.2.0).
void check_tokenizers(LoadResult& result, const LoadOptions& opt) {
  std::map<std::string, std::vector<const Row*>> by_tokenizer;
  for (const auto& r : result.rows)
    if (!r.tokenizer.empty()) by_tokenizer[r.tokenizer].push_back(&r);
  if (by_tokenizer.size() < 2) return;
  std::string list;
  for (const auto& [hash, rows] : by_tokenizer)
    list += "\n  " + hash.substr(0, 12) + ": " + std::to_string(rows.size()) + " row(s), e.g. " +
            located(rows.front()->source, rows.front()->line, "run '" + rows.front()->run + "'");
  const std::string what = "the rows come from " + std::to_string(by_tokenizer.size()) +
                           " different tokenizers, so their losses per token are not comparable:" + list;
  if (!opt.allow_mixed_tokenizers)
    throw Error(what + "\nfit each tokenizer's runs separately, or pass --allow-mixed-tokenizers");
  result.warnings.push_back(what);
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

}  // namespace

const std::vector<std::string>& canonical_fields() {
  static const std::vector<std::string> fields = {"run", "group", "tokenizer", "depth", "width", "loss", "tau",
                                                  "loss_se", "params", "params_nonembedding",
                                                  "tokens", "compute"};
  return fields;
}

std::pair<std::string, ColumnSpec> parse_column_spec(const std::string& spec) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
    throw Error("--col '" + spec + "': expected FIELD=COLUMN[*SCALE]");
  std::string field = spec.substr(0, eq), column = spec.substr(eq + 1);
  const auto& f = canonical_fields();
  if (std::find(f.begin(), f.end(), field) == f.end()) {
    std::string all;
    for (const auto& x : f) all += (all.empty() ? "" : ", ") + x;
    throw Error("--col '" + spec + "': unknown field '" + field + "' (known: " + all + ")");
  }
  ColumnSpec cs;
  auto star = column.rfind('*');
  if (star != std::string::npos) {
    double scale;
    if (!parse_number(column.substr(star + 1), scale) || !(scale > 0))
      throw Error("--col '" + spec + "': scale after '*' must be a positive number");
    cs.scale = scale;
    column = column.substr(0, star);
  }
  cs.column = column;
  return {field, cs};
}

std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const auto& in : inputs) {
    if (has_glob_chars(in) && !fs::exists(in)) {
      glob_t g{};
      int rc = ::glob(in.c_str(), 0, nullptr, &g);
      if (rc != 0) {
        ::globfree(&g);
        throw Error(located(in, 0, "pattern matches no file"));
      }
      std::vector<std::string> matched;
      for (size_t i = 0; i < g.gl_pathc; ++i) matched.push_back(g.gl_pathv[i]);
      ::globfree(&g);
      auto sub = expand_inputs(matched);
      out.insert(out.end(), sub.begin(), sub.end());
    } else if (fs::is_directory(in)) {
      std::vector<std::string> found;
      for (auto& e : fs::recursive_directory_iterator(in)) {
        if (!e.is_regular_file()) continue;
        std::string name = e.path().filename().string();
        if (name == "summary.json") found.push_back(e.path().string());
      }
      if (found.empty()) throw Error(located(in, 0, "directory holds no summary.json"));
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else if (fs::exists(in)) {
      out.push_back(in);
    } else {
      throw Error(located(in, 0, "no such file or directory"));
    }
  }
  return out;
}

LoadResult load_tables(const std::vector<std::string>& inputs, const LoadOptions& options) {
  LoadResult result;
  for (const auto& path : expand_inputs(inputs)) {
    result.files.push_back(path);
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (ext == ".csv") load_csv(path, options, result);
    else if (ext == ".jsonl" || ext == ".ndjson") load_jsonl(path, options, result);
    else if (ext == ".json") load_summary(path, options, result);
    else throw Error(located(path, 0, "unknown input type '" + ext + "' (expected .json summary, .csv or .jsonl)"));
  }
  if (result.rows.empty()) throw Error("no usable rows in the input");
  // duplicates: same run id, or same configuration (depth, width, tokens)
  std::map<std::string, const Row*> by_run;
  std::map<std::tuple<double, double, double, double, double>, const Row*> by_config;
  for (const auto& r : result.rows) {
    auto [it, fresh] = by_run.emplace(r.run, &r);
    if (!fresh)
      result.warnings.push_back(located(r.source, r.line, "duplicate run '" + r.run + "' (first at " +
                                                             located(it->second->source, it->second->line, "") + ")"));
    auto [it2, fresh2] = by_config.emplace(std::make_tuple(r.depth, r.width, r.tokens, r.params, r.params_nonemb), &r);
    const bool same_group = !r.group.empty() && r.group == it2->second->group;  // replicates, by design
    if (!fresh2 && fresh && !same_group && result.warnings.size() < 1000)
      result.warnings.push_back(located(r.source, r.line,
                                        "duplicate configuration D=" + std::to_string((long long)r.depth) +
                                            " W=" + std::to_string((long long)r.width) + " (also run '" +
                                            it2->second->run + "'); both are kept"));
  }
  check_tokenizers(result, options);
  return result;
}

void resolve_inputs(std::vector<Row>& rows, const std::string& n_source) {
  bool all_nonemb = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.params_nonemb > 0; });
  for (auto& r : rows) {
    double n12 = 12.0 * r.depth * r.width * r.width;
    if (n_source == "12dw2" || (n_source == "auto" && !all_nonemb)) {
      r.N = n12;
    } else if (n_source == "nonembedding" || n_source == "auto") {
      if (!(r.params_nonemb > 0))
        throw Error(located(r.source, r.line, "--n nonembedding: row has no params_nonembedding"));
      r.N = r.params_nonemb;
    } else if (n_source == "total") {
      if (!(r.params > 0)) throw Error(located(r.source, r.line, "--n total: row has no params"));
      r.N = r.params;
    } else {
      throw Error("--n '" + n_source + "': expected auto, 12dw2, total or nonembedding");
    }
    if (r.tokens > 0) r.T = r.tokens;
    else if (r.compute > 0) r.T = r.compute / (6.0 * r.N);
    else r.T = 0;  // unknown
  }
}

}  // namespace shapelaw::fit
