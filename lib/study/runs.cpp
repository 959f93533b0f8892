#include "study/runs.h"

#include <algorithm>
#include <regex>
#include <tuple>

#include "records/run_summary.h"
#include "util/error.h"

namespace shapelaw::study {

std::string row_of(const std::string& id) {
  static const std::regex suffix("(-lr[0-9.eE+-]+)?(-s[0-9]+)?$");
  return std::regex_replace(id, suffix, "", std::regex_constants::format_first_only);
}

namespace {
double number_at(const nlohmann::json& j, const std::string& path, const char* a, const char* b = nullptr) {
  const nlohmann::json* v = j.contains(a) ? &j[a] : nullptr;
  if (v && b) v = v->is_object() && v->contains(b) ? &(*v)[b] : nullptr;
  if (!v || !v->is_number())
    throw Error(located(path, 0, std::string("field '") + a + (b ? std::string(".") + b : "") +
                                     "': " + (v ? "not a number" : "missing") + " (a study needs it)"));
  return v->get<double>();
}
}  // namespace

Run read_run(const std::string& summary_path) {
  const records::RunSummary s = records::read_run_summary(summary_path);
  const nlohmann::json& j = s.json;
  Run r;
  r.path = summary_path;
  r.run_id = s.run_id;
  r.row = row_of(s.group.empty() ? s.run_id : s.group);
  r.param = j.value("param", std::string("sp"));
  r.depth = int(s.depth);
  r.width = int(s.width);
  if (r.depth <= 0 || r.width <= 0) throw Error(located(summary_path, 0, "field 'depth'/'width': missing (a study needs the shape)"));
  r.lr = number_at(j, summary_path, "config", "lr");
  r.seed = int64_t(number_at(j, summary_path, "config", "seed"));
  if (!j.contains("final_val_loss") || j["final_val_loss"].is_null())
    throw Error(located(summary_path, 0, "field 'final_val_loss': missing (the run has no validation loss: train with --val-tokens)"));
  r.val_loss = number_at(j, summary_path, "final_val_loss");
  r.params_total = number_at(j, summary_path, "params", "total");
  r.params_non_embedding = number_at(j, summary_path, "params", "non_embedding");
  r.params_12dw2 = j.contains("params") && j["params"].contains("paper_12DW2")
                       ? number_at(j, summary_path, "params", "paper_12DW2")
                       : 12.0 * r.depth * double(r.width) * r.width;
  r.tokens = number_at(j, summary_path, "tokens");
  r.wall_seconds = j.value("wall_seconds", 0.0);
  return r;
}

std::vector<Run> read_runs(const std::vector<std::string>& summary_paths) {
  std::vector<Run> runs;
  runs.reserve(summary_paths.size());
  for (const auto& p : summary_paths) runs.push_back(read_run(p));
  std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
    return std::tie(a.width, a.depth, a.row, a.lr, a.seed, a.path) < std::tie(b.width, b.depth, b.row, b.lr, b.seed, b.path);
  });
  return runs;
}

}  // namespace shapelaw::study
