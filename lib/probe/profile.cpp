#include "util/csv.h"
#include "probe/profile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "records/versioned_json.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw::probe {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {


double parse_double(const std::string& text, const std::string& path, long long line, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
    throw Error(located(path, line, what + " is not a number: '" + text + "'"));
  return v;
}

long long parse_int(const std::string& text, const std::string& path, long long line, const std::string& what) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE)
    throw Error(located(path, line, what + " is not an integer: '" + text + "'"));
  return v;
}

}  // namespace

std::string format_number(double v) {
  if (std::isnan(v)) return "";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

int GradProfile::depth() const {
  if (meta.contains("depth") && meta["depth"].is_number_integer()) return meta["depth"].get<int>();
  int d = 0;
  for (const auto& r : rows)
    if (r.component == "block") d = std::max(d, r.layer + 1);
  return d;
}

int GradProfile::batches() const {
  if (meta.contains("batches") && meta["batches"].is_number_integer()) return std::max(1, meta["batches"].get<int>());
  return 1;
}

void compute_ratios(GradProfile& p) {
  const int last = p.depth() - 1;
  std::map<std::string, double> ref;
  for (const auto& r : p.rows)
    if (r.layer == last && r.layer >= 0) ref[r.component] = r.norm;
  for (auto& r : p.rows) {
    const bool in_block = r.layer >= 0 && r.layer <= last && r.component != "final_norm" && r.component != "head";
    auto it = ref.find(in_block ? r.component : "block");
    r.ratio = (it != ref.end() && it->second > 0) ? r.norm / it->second : std::nan("");
  }
}

void component_series(const GradProfile& p, const std::string& component, std::vector<double>& norms,
                      std::vector<double>& se) {
  const int D = p.depth();
  norms.assign(size_t(std::max(D, 0)), std::nan(""));
  se.assign(size_t(std::max(D, 0)), 0.0);
  const double k = p.batches();
  for (const auto& r : p.rows) {
    if (r.component != component || r.layer < 0 || r.layer >= D) continue;
    norms[size_t(r.layer)] = r.norm;
    se[size_t(r.layer)] = k > 1 ? r.norm_sd / std::sqrt(k) : 0.0;
  }
  for (int l = 0; l < D; ++l)
    if (std::isnan(norms[size_t(l)]))
      throw Error("the profile has no '" + component + "' norm for layer " + std::to_string(l) + " (depth " +
                  std::to_string(D) + ")");
}

std::string profile_csv(const GradProfile& p) {
  std::string out = "layer,component,norm,ratio,norm_sd\n";
  for (const auto& r : p.rows)
    out += std::to_string(r.layer) + "," + r.component + "," + format_number(r.norm) + "," + format_number(r.ratio) +
           "," + format_number(r.norm_sd) + "\n";
  return out;
}

void write_profile(const std::string& dir, const GradProfile& p) {
  make_directories(dir);
  write_file_atomic(dir + "/grad_profile.csv", profile_csv(p));
  write_file_atomic(dir + "/grad_profile.json", p.meta.dump(2) + "\n");
}

GradProfile read_profile(const std::string& path) {
  std::string csv_path = path, meta_path;
  if (fs::is_directory(path)) {
    csv_path = (fs::path(path) / "grad_profile.csv").string();
    if (!fs::exists(csv_path)) {
      if (fs::is_directory(fs::path(path) / "grad_probe")) {
        std::vector<std::string> dirs;
        for (auto& e : fs::directory_iterator(fs::path(path) / "grad_probe"))
          if (fs::exists(e.path() / "grad_profile.csv")) dirs.push_back(e.path().string());
        std::sort(dirs.begin(), dirs.end());
        std::string found;
        for (auto& d : dirs) found += (found.empty() ? "" : ", ") + d;
        if (fs::exists(fs::path(path) / "grad_probe" / "grad_profile.csv"))
          found = (fs::path(path) / "grad_probe").string();
        if (!found.empty()) throw Error(located(path, 0, "no grad_profile.csv here; measured profiles: " + found));
      }
      if (fs::exists(fs::path(path) / "grad_norms.csv"))
        throw Error(located(path, 0, "no grad_profile.csv here (this looks like a train run: use --train-log " +
                                         (fs::path(path) / "grad_norms.csv").string() +
                                         " or run `probe-grads measure` first)"));
      throw Error(located(path, 0, "no grad_profile.csv in this directory (run `probe-grads measure` first)"));
    }
  }
  meta_path = (fs::path(csv_path).parent_path() / "grad_profile.json").string();
  if (fs::path(csv_path).parent_path().empty()) meta_path = "grad_profile.json";
  GradProfile p;
  if (fs::exists(meta_path)) p.meta = records::read_versioned_json(meta_path, kGradProfileFormat, kGradProfileVersion);
  if (!fs::exists(csv_path)) throw Error(located(csv_path, 0, "no such file"));
  std::istringstream in(read_file(csv_path));
  std::string line;
  long long lineno = 0;
  std::map<std::string, size_t> col;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    auto f = split_csv_line(line);
    if (col.empty()) {
      for (size_t i = 0; i < f.size(); ++i) col[f[i]] = i;
      for (const char* need : {"layer", "component", "norm"})
        if (!col.count(need))
          throw Error(located(csv_path, lineno, std::string("header lacks column '") + need +
                                                    "' (expected layer,component,norm,ratio,norm_sd)"));
      continue;
    }
    if (f.size() != col.size())
      throw Error(located(csv_path, lineno, "expected " + std::to_string(col.size()) + " fields, got " +
                                                std::to_string(f.size())));
    ProfileRow r;
    r.layer = int(parse_int(f[col["layer"]], csv_path, lineno, "layer"));
    r.component = f[col["component"]];
    r.norm = parse_double(f[col["norm"]], csv_path, lineno, "norm");
    if (col.count("norm_sd") && !f[col["norm_sd"]].empty())
      r.norm_sd = parse_double(f[col["norm_sd"]], csv_path, lineno, "norm_sd");
    p.rows.push_back(r);
  }
  if (p.rows.empty()) throw Error(located(csv_path, 0, "no profile rows"));
  if (!p.meta.contains("depth")) p.meta["depth"] = p.depth();
  compute_ratios(p);
  return p;
}

GradProfile profile_from_train_log(const std::string& path, long long step) {
  if (!fs::exists(path)) throw Error(located(path, 0, "no such file (train writes it with --probe-steps)"));
  std::istringstream in(read_file(path));
  std::string line;
  long long lineno = 0;
  std::map<long long, std::vector<ProfileRow>> by_step;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    if (lineno == 1) {
      if (line.rfind("step,layer,component,norm", 0) != 0)
        throw Error(located(path, 1, "not a train grad_norms.csv (header must be step,layer,component,norm)"));
      continue;
    }
    auto f = split_csv_line(line);
    if (f.size() != 4) throw Error(located(path, lineno, "expected 4 fields, got " + std::to_string(f.size())));
    ProfileRow r;
    long long s = parse_int(f[0], path, lineno, "step");
    r.layer = int(parse_int(f[1], path, lineno, "layer"));
    r.component = f[2];
    r.norm = parse_double(f[3], path, lineno, "norm");
    by_step[s].push_back(r);
  }
  if (by_step.empty()) throw Error(located(path, 0, "no probe steps logged"));
  if (step < 0) step = by_step.rbegin()->first;
  auto it = by_step.find(step);
  if (it == by_step.end()) {
    std::string steps;
    for (auto& [s, rows] : by_step) steps += (steps.empty() ? "" : ", ") + std::to_string(s);
    throw Error(located(path, 0, "step " + std::to_string(step) + " was not probed (steps present: " + steps + ")"));
  }
  GradProfile p;
  p.rows = it->second;
  const int D = p.depth();
  // train logs step s with the weights after s-1 updates (the gradient of step s)
  p.meta = {{"format", kGradProfileFormat}, {"version", kGradProfileVersion},      {"source", "train-log"},
            {"train_log", path},                  {"log_step", step}, {"step", step - 1},
            {"depth", D},                         {"batches", 1}};
  // width and run id from the run's summary.json / latest checkpoint when next to the log
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (fs::exists(dir / "summary.json")) {
    try {
      json s = json::parse(read_file((dir / "summary.json").string()));
      for (const char* k : {"run_id", "width", "seq_len", "vocab_size", "mlp", "norm"})
        if (s.contains(k)) p.meta[k] = s[k];
      if (s.contains("depth") && s["depth"] != D)
        throw Error(located(path, 0, "logs " + std::to_string(D) + " layers but summary.json says depth " +
                                         s["depth"].dump()));
    } catch (const json::exception& e) {
      throw Error(located((dir / "summary.json").string(), 0, std::string("not valid JSON: ") + e.what()));
    }
  }
  if (!p.meta.contains("run_id")) p.meta["run_id"] = fs::absolute(dir).lexically_normal().filename().string();
  compute_ratios(p);
  return p;
}

json fit_record(const GradProfile& p, const std::string& component, const DecayFit& fit,
                const DecayFitOptions& o, const std::string& profile_path) {
  json j = {{"format", kGradFitFormat}, {"version", kGradFitVersion}};
  for (const char* k : {"run_id", "run_dir", "depth", "width", "step", "source", "batches", "batch_size", "seed",
                        "split", "data_manifest_sha256"})
    if (p.meta.contains(k)) j[k] = p.meta[k];
  j["profile"] = profile_path;
  j["component"] = component;
  j["options"] = {{"exclude_first", o.exclude_first}, {"exclude_last", o.exclude_last},
                  {"weighted", o.weighted},           {"through_origin", o.through_origin},
                  {"min_r2", o.min_r2},               {"confidence", o.confidence}};
  j["model"] = "ln(norm_l / norm_last) = intercept + slope * (D-1-l); tau = -1/slope; D_crit = 1 + tau";
  j["fit"] = to_json(fit);
  // the headline numbers at the top level, for readers that want only those
  j["tau"] = j["fit"]["tau"];
  j["tau_ci"] = j["fit"]["tau_ci"];
  j["r2"] = j["fit"]["r2"];
  j["dcrit"] = j["fit"]["dcrit"];
  j["dcrit_ci"] = j["fit"]["dcrit_ci"];
  j["flags"] = j["fit"]["flags"];
  return j;
}

}  // namespace shapelaw::probe
