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

#include "records/run_summary.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/text.h"

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
      {"tokenizer_kind", {"tokenizer_kind"}},
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
  if (!is_decimal_text(t)) return false;  // "0x10" is not a loss
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


// Fills one Row from a record; returns an error message or empty. `used` collects the
// source names read as run, group, response, loss_se and tokenizer (not configuration).
std::string fill_row(const Record& rec, const LoadOptions& opt, Row& row, std::set<std::string>& used_names) {
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
  const std::string response = opt.tau_table ? "tau" : "loss";
  struct Num { const char* field; double* dst; bool required; bool positive; };
  const bool shape_required = opt.tau_table;  // τ is fitted against width
  for (Num o : {Num{response.c_str(), &row.loss, true, true}, Num{"depth", &row.depth, false, true},
                Num{"width", &row.width, shape_required, true}, Num{"loss_se", &row.loss_se, false, false},
                Num{"params", &row.params, false, true}, Num{"params_nonembedding", &row.params_nonemb, false, true},
                Num{"tokens", &row.tokens, false, true}, Num{"compute", &row.compute, false, true}}) {
    std::string text, used;
    double v = 0;
    bool is_num = false;
    const std::string field = o.field;
    if (!lookup(field, text, v, is_num, used)) {
      if (o.required) return "missing required field '" + field + "' (column '" + used + "')";
      continue;
    }
    if (field == response || field == "loss_se") used_names.insert(used);
    if (!is_num) return "field '" + field + "' (column '" + used + "') is not a number: '" + text + "'";
    if (o.positive && !(v > 0)) return "field '" + field + "' (column '" + used + "') must be > 0, got " + text;
    *o.dst = v;
  }
  for (auto [field, dst] : {std::pair<const char*, std::string*>{"run", &row.run}, {"group", &row.group},
                             {"tokenizer", &row.tokenizer}, {"tokenizer_kind", &row.tokenizer_kind}}) {
    std::string text, used;
    double v;
    bool is_num;
    if (lookup(field, text, v, is_num, used)) {
      *dst = text;
      used_names.insert(used);
    }
  }
  return {};
}

// summary: the run's record (its binding_config), or null for a table row.
void add_row(LoadResult& result, const LoadOptions& opt, const Record& rec, const std::string& path,
             long long line, const records::RunSummary* summary = nullptr) {
  Row row;
  row.source = path;
  row.line = line;
  std::set<std::string> used;
  std::string err = fill_row(rec, opt, row, used);
  if (!err.empty()) {
    std::string msg = located(path, line, err);
    if (!opt.skip_bad_rows) throw Error(msg + " (use --skip-bad-rows to skip such rows)");
    result.warnings.push_back("skipped " + msg);
    return;
  }
  if (row.run.empty()) row.run = fs::path(path).filename().string() + ":" + std::to_string(line);
  if (summary) {
    row.binding = summary->binding_config;
    row.binding_from_summary = summary->has_config;
  } else if (rec.csv) {
    for (const auto& [key, text] : *rec.csv) {
      if (used.count(key)) continue;
      double v;
      row.binding[key] = parse_number(text, v) ? json(v) : json(text);
    }
  } else if (rec.obj) {
    for (auto it = rec.obj->begin(); it != rec.obj->end(); ++it)
      if (!used.count(it.key())) row.binding[it.key()] = it.value();
  }
  result.rows.push_back(row);
}

void load_csv(const std::string& path, const LoadOptions& opt, LoadResult& result) {
  CsvReadOptions ro;
  ro.allow_ragged = true;
  const CsvTable table = read_csv(path, ro);
  for (const auto& record : table.records) {
    if (record.fields.size() != table.header.size()) {
      std::string msg = located(path, record.line, ragged_message(table, record));
      if (!opt.skip_bad_rows) throw Error(msg + " (use --skip-bad-rows to skip such rows)");
      result.warnings.push_back("skipped " + msg);
      continue;
    }
    std::map<std::string, std::string> rec;
    for (size_t i = 0; i < table.header.size(); ++i) rec[table.header[i]] = record.fields[i];
    add_row(result, opt, Record{&rec, nullptr}, path, record.line);
  }
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
  // hand-written summaries without "format" are accepted; another format or a newer version is not
  const records::RunSummary summary = records::read_run_summary(path, false);
  add_row(result, opt, Record{nullptr, &summary.json}, path, 0, &summary);
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
    list += "\n  " + (rows.front()->tokenizer_kind.empty() ? "" : rows.front()->tokenizer_kind + " ") + hash.substr(0, 12) +
            ": " + std::to_string(rows.size()) + " row(s), e.g. " +
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
  static const std::vector<std::string> fields = {"run", "group", "tokenizer", "tokenizer_kind", "depth", "width", "loss", "tau",
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

void canonical_order(std::vector<Row>& rows) {
  auto key = [](const Row& r) {
    return std::make_tuple(r.depth, r.width, r.params, r.params_nonemb, r.tokens, r.compute, r.loss);
  };
  std::stable_sort(rows.begin(), rows.end(), [&](const Row& a, const Row& b) {
    if (key(a) != key(b)) return key(a) < key(b);
    return std::tie(a.run, a.source, a.line) < std::tie(b.run, b.source, b.line);
  });
}

namespace {

// A shape field is known for every row or for none (a params/tokens/loss table).
void check_all_or_none(const std::vector<Row>& rows, const char* field, double Row::*member) {
  const Row* with = nullptr;
  const Row* without = nullptr;
  for (const auto& r : rows) (r.*member > 0 ? with : without) = &r;
  if (with && without)
    throw Error(located(without->source, without->line,
                        std::string("no ") + field + " for this row, but " + located(with->source, with->line, "") +
                            " has one; give " + field + " for every row or for none"));
}

}  // namespace

LoadResult load_tables(const std::vector<std::string>& inputs, const LoadOptions& options) {
  LoadResult result;
  // files in sorted order, rows in canonical order: listing order changes nothing
  std::vector<std::string> paths = expand_inputs(inputs);
  std::sort(paths.begin(), paths.end());
  for (const auto& path : paths) {
    result.files.push_back(path);
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (ext == ".csv") load_csv(path, options, result);
    else if (ext == ".jsonl" || ext == ".ndjson") load_jsonl(path, options, result);
    else if (ext == ".json") load_summary(path, options, result);
    else throw Error(located(path, 0, "unknown input type '" + ext + "' (expected .json summary, .csv or .jsonl)"));
  }
  if (result.rows.empty()) throw Error("no usable rows in the input");
  canonical_order(result.rows);
  check_all_or_none(result.rows, "depth", &Row::depth);
  check_all_or_none(result.rows, "width", &Row::width);
  // duplicate run ids (duplicate configurations: fit/best_of.h check_replicates); rows of one
  // run at different token counts are its checkpoints, not duplicates
  std::map<std::pair<std::string, double>, const Row*> by_run;
  for (const auto& r : result.rows) {
    auto [it, fresh] = by_run.emplace(std::make_pair(r.run, r.tokens), &r);
    if (!fresh)
      result.warnings.push_back(located(r.source, r.line, "duplicate run '" + r.run + "' (also at " +
                                                             located(it->second->source, it->second->line, "") + ")"));
  }
  check_tokenizers(result, options);
  return result;
}

NChoice resolve_inputs(std::vector<Row>& rows, const std::string& n_source,
                       const std::map<std::string, ColumnSpec>& explicit_columns) {
  auto every = [&](double Row::*m) { return std::all_of(rows.begin(), rows.end(), [&](const Row& r) { return r.*m > 0; }); };
  const bool shapes = every(&Row::depth) && every(&Row::width);
  NChoice c;
  if (n_source == "auto") {
    if (explicit_columns.count("params_nonembedding")) {
      c = {"nonembedding", "the mapped column --col params_nonembedding=" + explicit_columns.at("params_nonembedding").column};
    } else if (explicit_columns.count("params")) {
      c = {"total", "the mapped column --col params=" + explicit_columns.at("params").column};
    } else if (every(&Row::params_nonemb)) {
      c = {"nonembedding", "every row has a non-embedding parameter count"};
    } else if (shapes) {
      c = {"12dw2", "12*D*W^2: not every row has a non-embedding parameter count"};
    } else if (every(&Row::params)) {
      c = {"total", "the total parameter count: the rows have no depth and width"};
    } else {
      throw Error("no parameter count N: the rows have neither depth and width nor a params column for every row "
                  "(map one, e.g. --col params=COLUMN)");
    }
    c.reason = "--n auto chose " + c.source + ": " + c.reason;
  } else if (n_source == "12dw2" || n_source == "total" || n_source == "nonembedding") {
    c = {n_source, "--n " + n_source};
  } else {
    throw Error("--n '" + n_source + "': expected auto, 12dw2, total or nonembedding");
  }
  for (auto& r : rows) {
    if (c.source == "12dw2") {
      if (!(r.depth > 0 && r.width > 0))
        throw Error(located(r.source, r.line, "--n 12dw2: row has no depth and width"));
      r.N = 12.0 * r.depth * r.width * r.width;
    } else if (c.source == "nonembedding") {
      if (!(r.params_nonemb > 0))
        throw Error(located(r.source, r.line, "--n nonembedding: row has no params_nonembedding"));
      r.N = r.params_nonemb;
    } else {
      if (!(r.params > 0)) throw Error(located(r.source, r.line, "--n total: row has no params"));
      r.N = r.params;
    }
    if (r.tokens > 0) r.T = r.tokens;
    else if (r.compute > 0) r.T = r.compute / (6.0 * r.N);
    else r.T = 0;  // unknown
  }
  return c;
}

}  // namespace shapelaw::fit
