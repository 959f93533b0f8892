#include "train/prefetch.h"

#include <algorithm>
#include <chrono>

#include "util/progress.h"

namespace shapelaw {

Prefetcher::Prefetcher(const WindowSampler& sampler, WindowSampler::Cursor start, int64_t micro, size_t capacity)
    : sampler_(sampler), cursor_(start), micro_(micro), capacity_(std::max<size_t>(1, capacity)) {
  thread_ = std::thread([this] { loop(); });
}

Prefetcher::~Prefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

MicroBatch Prefetcher::next(double& wait_ms) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [this] { return !queue_.empty() || error_; });
  wait_ms += 1000.0 * seconds_since(t0);
  if (queue_.empty()) std::rethrow_exception(error_);
  MicroBatch b = std::move(queue_.front());
  queue_.pop_front();
  cv_.notify_all();
  return b;
}

void Prefetcher::loop() {
  try {
    const size_t window = sampler_.window();
    std::vector<uint32_t> buffer(window);
    while (true) {
      MicroBatch b;
      b.tokens.resize(size_t(micro_) * window);
      for (int64_t i = 0; i < micro_; ++i) {
        sampler_.next(cursor_, buffer.data());
        std::copy(buffer.begin(), buffer.end(), b.tokens.begin() + i * window);
      }
      b.after = cursor_;
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stop_ || queue_.size() < capacity_; });
      if (stop_) return;
      queue_.push_back(std::move(b));
      cv_.notify_all();
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = std::current_exception();
    cv_.notify_all();
  }
}

std::pair<torch::Tensor, torch::Tensor> to_batch(std::vector<int64_t>& tokens, int64_t micro, int64_t window,
                                                 const torch::Device& device) {
  auto t = torch::from_blob(tokens.data(), {micro, window}, torch::kLong);
  // CUDA: through pinned memory, so that the upload is asynchronous and the host goes on
  // queueing the forward pass (the caching host allocator keeps the pinned buffer until
  // the copy has run; `tokens` may go at once, pin_memory copied it)
  t = device.is_cpu() ? t.clone() : t.pin_memory().to(torch::TensorOptions().device(device), /*non_blocking=*/true);
  return {t.slice(1, 0, window - 1), t.slice(1, 1, window)};
}

}  // namespace shapelaw
