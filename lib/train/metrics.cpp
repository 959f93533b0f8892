#include "train/metrics.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {

namespace fs = std::filesystem;
using json = nlohmann::json;

LineFile::LineFile(const std::string& path, bool append) : path_(path) {
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  if (!file_) throw Error(path + ": cannot open for writing: " + std::strerror(errno));
}

LineFile::~LineFile() {
  if (file_) std::fclose(file_);
}

void LineFile::write(const std::string& line) {
  if (std::fputs(line.c_str(), file_) < 0 || std::fputc('\n', file_) < 0 || std::fflush(file_) != 0)
    throw Error(path_ + ": write failed: " + std::strerror(errno));
}

void truncate_lines(const std::string& path, int64_t max_step, const std::function<int64_t(const std::string&)>& step_of) {
  if (!fs::exists(path)) return;
  std::istringstream in(read_file(path));
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    int64_t s = -1;
    try {
      s = step_of(line);
    } catch (...) {
      continue;  // a torn last line from the killed run
    }
    if (s <= max_step) kept += line + "\n";
  }
  write_file_atomic(path, kept);
}

RunMetrics::RunMetrics(const std::string& out, bool leader, bool grad_norms, int64_t resumed_step) : leader_(leader) {
  if (!leader) return;
  const std::string metrics_path = out + "/metrics.jsonl", grads_path = out + "/grad_norms.csv";
  if (resumed_step >= 0) {
    truncate_lines(metrics_path, resumed_step, [](const std::string& l) { return json::parse(l).at("step").get<int64_t>(); });
    truncate_lines(grads_path, resumed_step, [](const std::string& l) -> int64_t {
      if (l.rfind("step,", 0) == 0) return -1;
      return std::stoll(l.substr(0, l.find(',')));
    });
  } else {
    fs::remove(metrics_path);
    fs::remove(grads_path);
  }
  metrics_ = std::make_unique<LineFile>(metrics_path, true);
  if (grad_norms) {
    bool fresh = !fs::exists(grads_path) || fs::file_size(grads_path) == 0;
    grads_ = std::make_unique<LineFile>(grads_path, true);
    if (fresh) grads_->write("step,layer,component,norm");
  }
}

void RunMetrics::train(const StepRecord& r) {
  if (!metrics_) return;
  auto optional = [](double v) { return v < 0 ? json() : json(v); };
  metrics_->write(json{{"kind", "train"}, {"step", r.step}, {"tokens", r.tokens}, {"loss", r.loss}, {"lr", r.lr},
                       {"grad_norm", r.grad_norm}, {"tokens_per_s", r.tokens_per_s}, {"mfu", r.mfu},
                       {"data_wait_ms", r.data_wait_ms}, {"step_ms", r.step_ms},
                       {"forward_ms", optional(r.forward_ms)}, {"backward_ms", optional(r.backward_ms)},
                       {"optimizer_ms", optional(r.optimizer_ms)}}
                      .dump());
}

void RunMetrics::val(int64_t step, int64_t tokens, double v) {
  if (!metrics_) return;
  metrics_->write(
      json{{"kind", "val"}, {"step", step}, {"tokens", tokens}, {"val_loss", std::isfinite(v) ? json(v) : json()}}.dump());
}

void RunMetrics::grad_norm(int64_t step, int layer, const std::string& component, double norm) {
  if (grads_) grads_->write(std::to_string(step) + "," + std::to_string(layer) + "," + component + "," + fmt("%.9g", norm));
}

TailLoss tail_loss(const std::vector<double>& losses) {
  TailLoss t;
  t.steps = std::max<size_t>(1, (losses.size() + 9) / 10);
  for (size_t i = losses.size() - t.steps; i < losses.size(); ++i) t.mean += losses[i];
  t.mean /= double(t.steps);
  double var = 0;
  for (size_t i = losses.size() - t.steps; i < losses.size(); ++i) var += (losses[i] - t.mean) * (losses[i] - t.mean);
  t.se = t.steps > 1 ? std::sqrt(var / double(t.steps - 1)) / std::sqrt(double(t.steps)) : std::nan("");
  return t;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace shapelaw
