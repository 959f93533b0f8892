#include "fit/parallel.h"

#include <chrono>
#include <cstdio>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "util/progress.h"

namespace shapelaw::fit {

int default_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  if (threads <= 0) threads = default_threads();
  size_t nt = std::min<size_t>(threads, n);
  if (nt <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= n) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = n;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < nt; ++t) pool.emplace_back(worker);
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

void parallel_for_progress(size_t n, int threads, const std::string& label, const std::function<void(size_t)>& fn,
                           double interval) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto last = start;
  size_t done = 0;
  std::mutex mutex;
  parallel_for(n, threads, [&](size_t i) {
    fn(i);
    std::lock_guard<std::mutex> lock(mutex);
    ++done;
    const auto now = Clock::now();
    if (std::chrono::duration<double>(now - last).count() < interval) return;
    last = now;
    const double seconds = std::chrono::duration<double>(now - start).count(), fraction = double(done) / double(n);
    std::fprintf(stderr, "fit-law: %s: %zu/%zu refits, %.0f%%, ETA %s\n", label.c_str(), done, n, 100 * fraction,
                 format_duration(seconds * (1 - fraction) / fraction).c_str());
    std::fflush(stderr);
  });
}

}  // namespace shapelaw::fit
