#pragma once
// A run's records: metrics.jsonl and grad_norms.csv appended line by line (a resumed
// run first drops what the killed process wrote after its last checkpoint), the
// progress lines on stderr (summary.json is the run summary's: train/trainer.cpp and records/).
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shapelaw {

class LineFile {  // appended line by line, flushed after each line
 public:
  LineFile(const std::string& path, bool append);
  ~LineFile();
  void write(const std::string& line);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

// Keeps the lines of a JSONL/CSV file whose step is <= max_step. step_of returns -1 to keep.
void truncate_lines(const std::string& path, int64_t max_step, const std::function<int64_t(const std::string&)>& step_of);

// One optimizer step as metrics.jsonl records it.
struct StepRecord {
  int64_t step = 0, tokens = 0;
  double loss = 0, lr = 0, grad_norm = 0, tokens_per_s = 0, mfu = 0;
  double data_wait_ms = 0, step_ms = 0, forward_ms = -1, backward_ms = -1, optimizer_ms = 0;  // -1: not measured
};

class RunMetrics {
 public:
  // Rank 0 opens the files (fresh unless resumed at resumed_step >= 0); other ranks write nothing.
  RunMetrics(const std::string& out_dir, bool leader, bool grad_norms, int64_t resumed_step);
  void train(const StepRecord& r);
  void val(int64_t step, int64_t tokens, double val_loss);  // NaN: null
  void grad_norm(int64_t step, int layer, const std::string& component, double norm);
  bool leader() const { return leader_; }

 private:
  bool leader_;
  std::unique_ptr<LineFile> metrics_, grads_;
};

// Final train loss: mean over the last 10% of steps (every step has the same number of
// tokens), SE = sample sd / sqrt(n), the paper's Table 3 note (ignores autocorrelation
// between consecutive steps). se is NaN for a single step.
struct TailLoss {
  double mean = 0, se = 0;
  size_t steps = 0;
};
TailLoss tail_loss(const std::vector<double>& losses);

std::string fmt(const char* format, double v);

}  // namespace shapelaw
