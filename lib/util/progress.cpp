#include "util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace shapelaw {

Progress::Progress(std::string label, bool quiet, double interval_seconds)
    : label_(std::move(label)), quiet_(quiet), tty_(::isatty(2)), interval_(interval_seconds),
      start_(std::chrono::steady_clock::now()), last_(start_) {}

double Progress::elapsed_seconds() const {
  return seconds_since(start_);
}

std::string format_duration(double seconds) {
  char text[32];
  if (!(seconds >= 0)) return "?";
  if (seconds < 90) std::snprintf(text, sizeof text, "%.0f s", seconds);
  else if (seconds < 90 * 60) std::snprintf(text, sizeof text, "%.1f min", seconds / 60);
  else std::snprintf(text, sizeof text, "%.1f h", seconds / 3600);
  return text;
}

void Progress::update(uint64_t bytes, uint64_t total_bytes, uint64_t items, const char* item_name, bool force) {
  if (quiet_) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && std::chrono::duration<double>(now - last_).count() < interval_) return;
  last_ = now;
  double seconds = elapsed_seconds();
  double mb = bytes / 1e6, rate = seconds > 0 ? mb / seconds : 0;
  char eta[64] = "";
  if (total_bytes > 0 && bytes > 0) {
    double fraction = double(bytes) / double(total_bytes);
    std::snprintf(eta, sizeof eta, ", %.0f%%, ETA %s", 100 * fraction,
                  format_duration(seconds * (1 - fraction) / fraction).c_str());
  }
  std::fprintf(stderr, "%s%s: %llu %s, %.1f MB, %.1f MB/s%s%s", tty_ ? "\r" : "", label_.c_str(),
               (unsigned long long)items, item_name, mb, rate, eta, tty_ ? "\033[K" : "\n");
  std::fflush(stderr);
}

void Progress::finish(uint64_t bytes, uint64_t items, const char* item_name) {
  if (quiet_) return;
  update(bytes, 0, items, item_name, true);
  if (tty_) std::fputc('\n', stderr);
}

}  // namespace shapelaw
