#include "audit/model_table.h"

#include <algorithm>
#include <filesystem>

#include "util/csv.h"
#include "audit/hf_config.h"
#include "audit/numbers.h"
#include "audit/row_reader.h"
#include "audit/run_summary.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::audit {
namespace {

using Names = std::vector<std::string>;

void apply_extra(const RowReader& row, const std::string& extra, Arch& a) {
  size_t pos = 0;
  while (pos <= extra.size()) {
    size_t end = extra.find(';', pos);
    if (end == std::string::npos) end = extra.size();
    std::string item = trim(extra.substr(pos, end - pos));
    pos = end + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) row.fail("extra", "'" + item + "' is not key=value");
    std::string key = trim(item.substr(0, eq)), value = trim(item.substr(eq + 1));
    int64_t v = 0;
    bool b = false;
    auto need_int = [&]() {
      if (!parse_int(value, v)) row.fail("extra", key + "='" + value + "' is not an integer");
      return v;
    };
    if (key == "qkv_bias") {
      if (!parse_bool(value, b)) row.fail("extra", key + "='" + value + "' is not true/false");
      a.qkv_bias = b;
    } else if (key == "embedding_norm") {
      if (!parse_bool(value, b)) row.fail("extra", key + "='" + value + "' is not true/false");
      a.embedding_norm = b;
    } else if (key == "norms_per_layer") a.norms_per_layer = need_int();
    else if (key == "q_lora_rank") a.q_lora_rank = need_int();
    else if (key == "kv_lora_rank") a.kv_lora_rank = need_int();
    else if (key == "qk_nope_head_dim") a.qk_nope_head_dim = need_int();
    else if (key == "qk_rope_head_dim") a.qk_rope_head_dim = need_int();
    else if (key == "v_head_dim") a.v_head_dim = need_int();
    else row.fail("extra", "unknown key '" + key +
                               "' (known: qkv_bias, embedding_norm, norms_per_layer, q_lora_rank, kv_lora_rank, "
                               "qk_nope_head_dim, qk_rope_head_dim, v_head_dim)");
  }
}

ModelEntry parse_row(const CsvTable& table, const CsvRecord& record) {
  RowReader row(table, record);
  ModelEntry m;
  m.origin = located(table.path, record.line, "");
  m.origin = m.origin.substr(0, m.origin.size() - 2);
  Arch& a = m.arch;
  auto name = row.text({"name", "model"});
  if (!name) row.fail("name", "missing value");
  a.name = *name;
  a.depth = row.required_integer({"depth", "layers", "D"});
  a.width = row.required_integer({"width", "d_model", "hidden_size", "W"});
  read_arch_columns(row, a);
  m.family = row.text({"family"}).value_or("");
  m.kind = lower(row.text({"kind"}).value_or(a.is_moe() ? "moe" : "dense"));
  if (m.kind != "dense" && m.kind != "moe") row.fail("kind", "'" + m.kind + "' is not dense or moe");
  if (m.kind == "moe" && !a.is_moe()) row.fail("experts", "kind is moe but experts is not given");
  if (m.kind == "dense" && a.is_moe()) row.fail("kind", "dense but experts is " + std::to_string(a.experts));
  m.stated_params = row.count({"params", "params_total"}).value_or(0);
  m.stated_active = row.count({"active_params"}).value_or(0);
  m.source_arch = row.text({"source_arch", "source"}).value_or("");
  m.source_params = row.text({"source_params"}).value_or(m.source_arch);
  m.count_note = row.text({"count_note"}).value_or("");
  std::string why = validate(a);
  if (!why.empty()) {
    size_t colon = why.find(':');
    row.fail(why.substr(0, colon), why.substr(colon + 2));
  }
  return m;
}

}  // namespace

void read_arch_columns(const RowReader& row, Arch& a) {
  a.heads = row.integer({"heads"}).value_or(a.heads);
  a.kv_heads = row.integer({"kv_heads"}).value_or(a.kv_heads);
  a.head_dim = row.integer({"head_dim"}).value_or(a.head_dim);
  a.ffn = row.integer({"ffn", "intermediate_size"}).value_or(a.ffn);
  a.vocab = row.integer({"vocab", "vocab_size"}).value_or(a.vocab);
  if (auto t = row.text({"mlp"}); t && !parse_mlp(*t, a.mlp))
    row.fail("mlp", "'" + *t + "' is not one of gelu, swiglu, geglu");
  if (auto t = row.text({"norm"}); t && !parse_norm(*t, a.norm))
    row.fail("norm", "'" + *t + "' is not one of layernorm, rmsnorm");
  a.tied = row.boolean({"tied"}).value_or(a.tied);
  a.biases = row.boolean({"biases"}).value_or(a.biases);
  a.learned_positions = row.integer({"learned_positions"}).value_or(a.learned_positions);
  a.experts = row.integer({"experts"}).value_or(a.experts);
  a.experts_active = row.integer({"experts_active"}).value_or(a.experts_active);
  a.shared_experts = row.integer({"shared_experts"}).value_or(a.shared_experts);
  a.moe_ffn = row.integer({"moe_ffn"}).value_or(a.moe_ffn);
  a.dense_layers = row.integer({"dense_layers"}).value_or(a.dense_layers);
  if (auto t = row.text({"extra"})) apply_extra(row, *t, a);
}

std::vector<ModelEntry> load_models_csv(const std::string& path, bool keep_going, std::vector<std::string>* errors) {
  CsvTable table = read_csv(path);
  for (const char* required : {"name", "depth", "width"}) {
    bool ok = table.column({required}) >= 0 ||
              (std::string(required) == "name" && table.column({"model"}) >= 0) ||
              (std::string(required) == "depth" && table.column({"layers", "D"}) >= 0) ||
              (std::string(required) == "width" && table.column({"d_model", "hidden_size", "W"}) >= 0);
    if (!ok) throw Error(located(path, 1, std::string("missing column '") + required + "'"));
  }
  std::vector<ModelEntry> models;
  for (const auto& record : table.records) {
    try {
      models.push_back(parse_row(table, record));
    } catch (const Error& e) {
      if (!keep_going) throw;
      if (errors) errors->push_back(e.what());
    }
  }
  return models;
}

std::vector<ModelEntry> load_models(const std::vector<std::string>& inputs, bool keep_going,
                                    std::vector<std::string>* errors) {
  namespace fs = std::filesystem;
  // A directory is walked: its own config.json or summary.json, else every one below it,
  // and every other *.json below it that is a Hugging Face config (a top-level model_type:
  // examples/hf-configs/ names each by its model) but no run's other records (fit.json,
  // state.json, ...). Sorted, so the order of the report does not depend on the file system.
  auto is_hf_config = [](const fs::path& path) {
    try {
      const nlohmann::json j = nlohmann::json::parse(read_file(path.string()));
      return j.is_object() && j.contains("model_type") && !is_run_summary(j);
    } catch (const std::exception&) {
      return false;  // not JSON, unreadable: not a config (a named one is still read and reported)
    }
  };
  std::vector<std::string> expanded;
  for (const auto& input : inputs) {
    fs::path dir(input);
    if (!fs::is_directory(dir) || fs::exists(dir / "config.json") || fs::exists(dir / "summary.json")) {
      expanded.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied)) {
      if (!e.is_regular_file()) continue;
      const std::string name = e.path().filename().string();
      if (name == "config.json" || name == "summary.json" || (lower(e.path().extension().string()) == ".json" && is_hf_config(e.path())))
        found.push_back(e.path().string());
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) {
      const std::string why = located(input, 0, "no config.json, summary.json or Hugging Face config (a .json with a "
                                                "model_type) in the directory or below it");
      if (!keep_going) throw Error(why);
      if (errors) errors->push_back(why);
    }
    expanded.insert(expanded.end(), found.begin(), found.end());
  }
  std::vector<ModelEntry> all;
  for (const auto& input : expanded) {
    try {
      std::string path = input;
      if (fs::is_directory(path)) {
        fs::path dir(path);
        path = (dir / "config.json").string();
        if (!fs::exists(path) && fs::exists(dir / "summary.json")) path = (dir / "summary.json").string();
      }
      if (!fs::exists(path)) throw Error(located(path, 0, "no such file"));
      std::string ext = lower(fs::path(path).extension().string());
      if (ext == ".json") {
        nlohmann::json j;
        try {
          j = nlohmann::json::parse(read_file(path));
        } catch (const nlohmann::json::parse_error& e) {
          throw Error(located(path, 0, std::string("not valid JSON: ") + e.what()));
        }
        all.push_back(is_run_summary(j) ? model_from_run_summary(j, path) : model_from_hf_config_file(path));
      } else if (ext == ".csv") {
        auto rows = load_models_csv(path, keep_going, errors);
        all.insert(all.end(), rows.begin(), rows.end());
      } else {
        throw Error(located(path, 0, "unknown input type (expected a models .csv, a config.json, or a directory)"));
      }
    } catch (const Error& e) {
      if (!keep_going) throw;
      if (errors) errors->push_back(e.what());
    }
  }
  return all;
}

}  // namespace shapelaw::audit
