#include "probe/summarize.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

#include "probe/profile.h"
#include "records/versioned_json.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::probe {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

double number_or_nan(const json& j) {
  return j.is_number() ? j.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

SummaryTable summarize_fits(const std::vector<std::string>& inputs, const SummarizeOptions& o) {
  SummaryTable t;
  for (const auto& in : inputs) {
    if (fs::is_directory(in)) {
      std::vector<std::string> found;
      for (auto& e : fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied))
        if (e.is_regular_file() && e.path().filename() == "grad_fit.json") found.push_back(e.path().string());
      if (found.empty()) throw Error(located(in, 0, "no grad_fit.json below this directory (run `probe-grads fit`)"));
      std::sort(found.begin(), found.end());
      t.files.insert(t.files.end(), found.begin(), found.end());
    } else if (fs::exists(in)) {
      t.files.push_back(in);
    } else {
      throw Error(located(in, 0, "no such file or directory"));
    }
  }
  struct Row {
    std::string run, component, flags;
    long long depth, width, step;
    double tau, tau_lo, tau_hi, r2, dcrit, dcrit_lo, dcrit_hi;
    int n;
  };
  std::vector<Row> rows;
  std::map<std::tuple<std::string, long long, std::string>, std::string> seen;
  for (const auto& path : t.files) {
    json j = records::read_versioned_json(path, kGradFitFormat, kGradFitVersion);
    Row r;
    r.run = j.value("run_id", fs::path(path).parent_path().filename().string());
    r.component = j.value("component", "block");
    r.depth = j.value("depth", 0LL);
    r.width = j.contains("width") && j["width"].is_number() ? j["width"].get<long long>() : 0;
    r.step = j.contains("step") && j["step"].is_number() ? j["step"].get<long long>() : -1;
    if (o.step >= 0 && r.step != o.step) continue;
    const json& f = j.at("fit");
    r.tau = number_or_nan(f["tau"]);
    r.tau_lo = number_or_nan(f["tau_ci"][0]);
    r.tau_hi = f.value("tau_ci_unbounded", false) ? std::numeric_limits<double>::infinity()
                                                  : number_or_nan(f["tau_ci"][1]);
    r.r2 = number_or_nan(f["r2"]);
    r.dcrit = number_or_nan(f["dcrit"]);
    r.dcrit_lo = number_or_nan(f["dcrit_ci"][0]);
    r.dcrit_hi = f.value("tau_ci_unbounded", false) ? std::numeric_limits<double>::infinity()
                                                    : number_or_nan(f["dcrit_ci"][1]);
    r.n = f.value("n_points", 0);
    for (const auto& flag : f.value("flags", json::array()))
      r.flags += (r.flags.empty() ? "" : ";") + flag.get<std::string>();
    if (r.width <= 0)
      t.warnings.push_back(path + ": no width recorded (fit-law needs it: measure from a checkpoint)");
    auto key = std::make_tuple(r.run, r.step, r.component);
    if (seen.count(key))
      t.warnings.push_back(path + ": run " + r.run + " step " + std::to_string(r.step) + " also in " + seen[key]);
    seen[key] = path;
    const bool usable = std::isfinite(r.tau) && r.tau > 0;
    if (!usable) {
      t.warnings.push_back(path + ": run " + r.run + " step " + std::to_string(r.step) + ": no finite tau (" +
                           (r.flags.empty() ? "?" : r.flags) + ")" + (o.only_valid ? ", dropped" : ""));
      if (o.only_valid) continue;
    }
    rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return std::tie(a.width, a.depth, a.run, a.step, a.component) <
           std::tie(b.width, b.depth, b.run, b.step, b.component);
  });
  t.csv = "run,depth,width,step,tau,tau_lo,tau_hi,r2,dcrit,dcrit_lo,dcrit_hi,n_points,component,flags\n";
  for (const auto& r : rows) {
    t.csv += csv_field(r.run) + "," + std::to_string(r.depth) + "," + (r.width > 0 ? std::to_string(r.width) : "") +
             "," + (r.step >= 0 ? std::to_string(r.step) : "") + "," + format_number(r.tau) + "," +
             format_number(r.tau_lo) + "," + format_number(r.tau_hi) + "," + format_number(r.r2) + "," +
             format_number(r.dcrit) + "," + format_number(r.dcrit_lo) + "," + format_number(r.dcrit_hi) + "," +
             std::to_string(r.n) + "," + csv_field(r.component) + "," + csv_field(r.flags) + "\n";
  }
  t.rows = int(rows.size());
  return t;
}

}  // namespace shapelaw::probe
