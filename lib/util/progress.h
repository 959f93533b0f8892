#pragma once
// Progress lines on stderr for long work: counts, MB, MB/s and, when the total is
// known, percent and ETA. Redraws in place on a terminal, one line per update
// otherwise; at most every `interval` seconds; silent when quiet.
#include <chrono>
#include <cstdint>
#include <string>

namespace shapelaw {

// A duration as a person reads it: "45 s", "3.2 min", "2.1 h".
std::string format_duration(double seconds);

// Seconds from t to now on the steady clock.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class Progress {
 public:
  Progress(std::string label, bool quiet, double interval_seconds = 1.0);
  // bytes: progress in the unit of total_bytes (0 = unknown total); items: e.g. documents.
  void update(uint64_t bytes, uint64_t total_bytes, uint64_t items, const char* item_name, bool force = false);
  void finish(uint64_t bytes, uint64_t items, const char* item_name);
  double elapsed_seconds() const;

 private:
  std::string label_;
  bool quiet_, tty_;
  double interval_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace shapelaw
