#include "audit/table_check.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "util/csv.h"
#include "audit/model_table.h"
#include "audit/numbers.h"
#include "audit/paper_data.h"
#include "audit/param_count.h"
#include "audit/row_reader.h"
#include "util/error.h"

namespace shapelaw::audit {
namespace {

const std::vector<std::string> kDepth = {"depth", "D", "layers", "n_layers", "num_layers"};
const std::vector<std::string> kWidth = {"width", "W", "d_model", "hidden_size"};

bool has_any(const CsvTable& t, const std::vector<std::string>& names) { return t.column(names) >= 0; }

std::string origin_of(const std::string& path, long long line) { return path + ":" + std::to_string(line); }

}  // namespace

std::string scale_from_label(const std::string& label) {
  for (size_t i = 0; i < label.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(label[i]))) continue;
    if (i > 0 && std::isalnum(static_cast<unsigned char>(label[i - 1]))) continue;
    size_t j = i;
    while (j < label.size() && (std::isdigit(static_cast<unsigned char>(label[j])) || label[j] == '.')) ++j;
    if (j < label.size() && (label[j] == 'B' || label[j] == 'b') &&
        (j + 1 == label.size() || !std::isalnum(static_cast<unsigned char>(label[j + 1]))))
      return label.substr(i, j - i) + "B";
    i = j;
  }
  return "";
}

std::vector<TableRow> load_table_rows(const std::string& path, const CheckOptions& o, bool from_directory,
                                      std::vector<std::string>* errors, std::vector<std::string>* notes) {
  CsvTable table = read_csv(path);
  const std::vector<std::string> raw = {"params", "parameters", "params_total", "n_params"};
  const bool has_params = has_any(table, raw) || has_any(table, {"params_m"}) || has_any(table, {"params_b"}) ||
                          has_any(table, {"params_k"});
  if (!has_any(table, kDepth) || !has_any(table, kWidth) || !has_params) {
    std::string missing = !has_any(table, kDepth)   ? "depth (depth, D, layers)"
                          : !has_any(table, kWidth) ? "width (width, W, d_model, hidden_size)"
                                                    : "parameter count (params, params_m, params_b, parameters)";
    if (from_directory) {
      if (notes) notes->push_back(path + ": skipped: no " + missing + " column");
      return {};
    }
    throw Error(located(path, 1, "missing column: " + missing));
  }
  std::vector<TableRow> rows;
  for (const auto& record : table.records) {
    try {
      RowReader r(table, record);
      TableRow row;
      row.origin = origin_of(path, record.line);
      row.label = r.text({"run", "name", "model", "id", "config"}).value_or("");
      row.scale = r.text({"scale"}).value_or(scale_from_label(row.label));
      Arch& a = row.arch;
      a.name = row.label;
      a.depth = r.required_integer(kDepth);
      a.width = r.required_integer(kWidth);
      a.vocab = o.vocab;
      a.mlp = o.mlp;
      a.norm = o.norm;
      a.tied = o.tied;
      a.biases = o.biases;
      read_arch_columns(r, a);  // the models-CSV columns, where the table has them
      if (auto v = r.count(raw)) row.stated = *v;
      else if (auto m = r.count({"params_m"}, 1e6)) row.stated = *m;
      else if (auto b = r.count({"params_b"}, 1e9)) row.stated = *b;
      else if (auto k = r.count({"params_k"}, 1e3)) row.stated = *k;
      // An empty count is allowed: the row is not checked but takes part in the conflict search.
      row.dcrit_column = r.number({"dcrit_table", "dcrit"});
      row.ratio_column = r.number({"ratio_table", "ratio"});
      std::string why = validate(a);
      if (!why.empty()) {
        size_t colon = why.find(':');
        r.fail(why.substr(0, colon), why.substr(colon + 2));
      }
      rows.push_back(std::move(row));
    } catch (const Error& e) {
      if (!o.keep_going) throw;
      if (errors) errors->push_back(e.what());
    }
  }
  return rows;
}

std::vector<TableRow> paper_rows(const CheckOptions& o) {
  std::vector<TableRow> rows;
  for (const auto& c : paper_configs()) {
    TableRow row;
    row.origin = c.source;
    row.label = (c.scale.empty() ? "" : c.scale + " ") + c.role;
    row.scale = c.scale;
    row.arch.name = row.label;
    row.arch.depth = c.depth;
    row.arch.width = c.width;
    row.arch.vocab = kPaperVocab;
    row.arch.mlp = o.mlp;
    row.arch.norm = o.norm;
    row.arch.tied = o.tied;
    row.arch.biases = o.biases;
    row.stated = c.params;
    row.reference = true;
    rows.push_back(row);
  }
  return rows;
}

ReportTable check_rows(const std::vector<TableRow>& rows, const CheckOptions& o) {
  ReportTable t;
  t.id = "rows";
  t.title = "Stated vs recomputed parameter counts (tolerance " + fixed(100 * o.tolerance, 1) + "%)";
  t.columns = {"source", "row", "D", "W", "stated", "counted", "diff", "flag", "12·D·W²", "matches", "implied W"};
  int flagged = 0, checked = 0;
  for (const auto& row : rows) {
    if (row.arch.width <= 0 || row.stated <= 0) continue;  // nothing to check (text rows without numbers)
    ++checked;
    const Arch& a = row.arch;
    ParamCount c = count_params(a);
    double diff = row.stated / static_cast<double>(c.total) - 1.0;
    bool flag = std::fabs(diff) > o.tolerance;
    flagged += flag;
    // Which counting conventions does the stated number match?
    std::vector<std::pair<std::string, double>> conventions;
    conventions.emplace_back(a.tied ? "total (tied)" : "total (untied)", static_cast<double>(c.total));
    conventions.emplace_back("non-embedding", static_cast<double>(c.non_embedding));
    conventions.emplace_back("12·D·W²", static_cast<double>(c.paper_12DW2));
    {
      Arch other = a;
      other.tied = !a.tied;
      conventions.emplace_back(other.tied ? "total (tied)" : "total (untied)", static_cast<double>(count_params(other).total));
    }
    if (a.mlp == Mlp::gelu && a.ffn == 0) {
      Arch sw = a;
      sw.mlp = Mlp::swiglu;
      sw.ffn = 4 * a.width;
      conventions.emplace_back("SwiGLU F=4W total", static_cast<double>(count_params(sw).total));
    }
    std::string matches;
    for (const auto& [name, value] : conventions)
      if (std::fabs(row.stated / value - 1.0) <= o.tolerance && matches.find(name) == std::string::npos)
        matches += (matches.empty() ? "" : ", ") + name;
    if (matches.empty()) matches = "none";
    double iw = implied_width(a, row.stated);
    nlohmann::ordered_json j;
    j["source"] = row.origin;
    j["row"] = row.label;
    j["scale"] = row.scale;
    j["depth"] = a.depth;
    j["width"] = a.width;
    j["vocab"] = a.vocab;
    j["mlp"] = to_string(a.mlp);
    j["params_stated"] = row.stated;
    j["params_counted"] = c.total;
    j["params_non_embedding"] = c.non_embedding;
    j["params_12DW2"] = c.paper_12DW2;
    j["relative_diff"] = diff;
    j["flagged"] = flag;
    j["matches"] = matches;
    j["implied_width"] = iw > 0 ? nlohmann::ordered_json(iw) : nlohmann::ordered_json();
    t.add({row.origin, row.label, std::to_string(a.depth), std::to_string(a.width), human_count(row.stated),
           human_count(static_cast<double>(c.total)), (diff >= 0 ? "+" : "") + fixed(100 * diff, 1) + "%",
           flag ? "FLAG" : "ok", human_count(static_cast<double>(c.paper_12DW2)), matches,
           iw > 0 ? fixed(iw, 0) : "—"},
          std::move(j));
    if (row.dcrit_column && row.ratio_column && *row.dcrit_column > 0) {
      double r = static_cast<double>(a.depth) / *row.dcrit_column;
      if (std::fabs(r - *row.ratio_column) > 0.01)
        t.notes.push_back(row.origin + ": ratio column " + fixed(*row.ratio_column, 2) + " but D/D_crit = " +
                          std::to_string(a.depth) + "/" + fixed(*row.dcrit_column, 0) + " = " + fixed(r, 3));
    }
  }
  t.notes.insert(t.notes.begin(),
                 std::to_string(flagged) + " of " + std::to_string(checked) + " rows differ from the recomputed count by more than " +
                     fixed(100 * o.tolerance, 1) + "%. Counted: " + std::string(to_string(o.mlp)) +
                     " MLP (F = 4W unless given), " + to_string(o.norm) + ", " + (o.tied ? "tied" : "untied") +
                     " embeddings, vocabulary " + std::to_string(o.vocab) +
                     " unless a column says otherwise; \"implied W\" is the width at which the stated count would hold.");
  return t;
}

ReportTable conflicts(const std::vector<TableRow>& rows, const CheckOptions& o) {
  ReportTable t;
  t.id = "conflicts";
  t.title = "Rows that contradict each other";
  t.columns = {"kind", "key", "values (sources)"};
  // (scale, depth) → width → sources
  std::map<std::pair<std::string, int64_t>, std::map<int64_t, std::vector<const TableRow*>>> by_scale;
  // same D×W and the same recomputed count (so the same vocabulary, MLP, heads, experts, ...)
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::vector<const TableRow*>> by_shape;
  for (const auto& r : rows) {
    if (!r.scale.empty() && r.arch.width > 0) by_scale[{r.scale, r.arch.depth}][r.arch.width].push_back(&r);
    if (r.arch.width > 0 && r.stated > 0) by_shape[{r.arch.depth, r.arch.width, count_params(r.arch).total}].push_back(&r);
  }
  auto involves_user = [](const auto& list) {
    return std::any_of(list.begin(), list.end(), [](const TableRow* r) { return !r->reference; });
  };
  for (const auto& [key, widths] : by_scale) {
    if (widths.size() < 2) continue;
    bool user = false;
    for (const auto& [w, list] : widths) user = user || involves_user(list);
    if (!user) continue;
    std::string text;
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    for (const auto& [w, list] : widths) {
      std::string srcs;
      nlohmann::ordered_json sj = nlohmann::ordered_json::array();
      for (const TableRow* r : list) {
        srcs += (srcs.empty() ? "" : ", ") + r->origin + (r->stated > 0 ? " " + human_count(r->stated) : "");
        sj.push_back(r->origin);
      }
      text += (text.empty() ? "" : "; ") + std::to_string(w) + " (" + srcs + ")";
      values.push_back({{"width", w}, {"sources", sj}});
    }
    std::string k = key.first + " " + std::to_string(key.second) + "L";
    t.add({"width", k, text}, {{"kind", "width"}, {"scale", key.first}, {"depth", key.second}, {"values", values}});
  }
  for (const auto& [key, list] : by_shape) {
    if (list.size() < 2 || !involves_user(list)) continue;
    double lo = list.front()->stated, hi = lo;
    for (const TableRow* r : list) lo = std::min(lo, r->stated), hi = std::max(hi, r->stated);
    if (hi / lo - 1.0 <= o.tolerance / 4) continue;
    std::string text;
    nlohmann::ordered_json values = nlohmann::ordered_json::array();
    std::set<std::string> seen;
    for (const TableRow* r : list) {
      std::string item = human_count(r->stated) + " (" + r->origin + ")";
      if (!seen.insert(item).second) continue;
      text += (text.empty() ? "" : "; ") + item;
      values.push_back({{"params", r->stated}, {"source", r->origin}});
    }
    const auto [depth, width, counted] = key;
    std::string k = std::to_string(depth) + "×" + std::to_string(width);
    t.add({"params", k, text + " — spread " + fixed(100 * (hi / lo - 1.0), 1) + "%"},
          {{"kind", "params"}, {"depth", depth}, {"width", width}, {"params_counted", counted}, {"values", values}});
  }
  t.notes.push_back("width: the same scale and depth appear with different widths; params: the same architecture (D×W and "
                    "recomputed count) with stated counts more than " + fixed(100 * o.tolerance / 4, 2) + "% apart." +
                    std::string(o.paper_claims ? " Rows are also compared with the paper's own tables and text "
                                                 "(built-in transcription; --no-paper-claims to disable)."
                                               : ""));
  return t;
}

Report check_tables(const std::vector<std::string>& inputs, const CheckOptions& o) {
  namespace fs = std::filesystem;
  Report rep;
  rep.kind = "check-table";
  std::vector<TableRow> rows;
  std::vector<std::string> notes;
  for (const auto& input : inputs) {
    try {
      if (fs::is_directory(input)) {
        std::vector<std::string> files;
        for (const auto& e : fs::directory_iterator(input))
          if (e.is_regular_file() && lower(e.path().extension().string()) == ".csv") files.push_back(e.path().string());
        std::sort(files.begin(), files.end());
        if (files.empty()) throw Error(located(input, 0, "no .csv files in this directory"));
        for (const auto& f : files) {
          auto part = load_table_rows(f, o, true, &rep.errors, &notes);
          rows.insert(rows.end(), part.begin(), part.end());
        }
      } else {
        if (!fs::exists(input)) throw Error(located(input, 0, "no such file"));
        auto part = load_table_rows(input, o, false, &rep.errors, &notes);
        rows.insert(rows.end(), part.begin(), part.end());
      }
    } catch (const Error& e) {
      if (!o.keep_going) throw;
      rep.errors.push_back(e.what());
    }
  }
  ReportTable checked = check_rows(rows, o);
  for (const auto& n : notes) checked.notes.push_back(n);
  std::vector<TableRow> pool = rows;
  if (o.paper_claims) {
    auto ref = paper_rows(o);
    pool.insert(pool.end(), ref.begin(), ref.end());
  }
  rep.tables.push_back(std::move(checked));
  rep.tables.push_back(conflicts(pool, o));
  rep.meta["tolerance"] = o.tolerance;
  rep.meta["vocab"] = o.vocab;
  rep.meta["mlp"] = to_string(o.mlp);
  rep.meta["tied"] = o.tied;
  rep.meta["paper_claims"] = o.paper_claims;
  return rep;
}

}  // namespace shapelaw::audit
