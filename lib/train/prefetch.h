#pragma once
// The training data loader: a background thread reads micro-batches of windows
// (seq_len + 1 tokens each) ahead of the loop. Each micro-batch carries the sampler
// cursor after it, so a checkpoint records exactly what was consumed, not what was
// prefetched.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "shards/dataset.h"

namespace shapelaw {

struct MicroBatch {
  std::vector<int64_t> tokens;  // micro x (seq_len + 1)
  WindowSampler::Cursor after;
};

class Prefetcher {
 public:
  Prefetcher(const WindowSampler& sampler, WindowSampler::Cursor start, int64_t micro, size_t capacity);
  ~Prefetcher();
  // Blocks until a micro-batch is ready; adds the wait to wait_ms; rethrows loader errors.
  MicroBatch next(double& wait_ms);

 private:
  void loop();

  const WindowSampler& sampler_;
  WindowSampler::Cursor cursor_;
  int64_t micro_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<MicroBatch> queue_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

// [micro, seq+1] tokens -> (inputs, targets) on the device
std::pair<torch::Tensor, torch::Tensor> to_batch(std::vector<int64_t>& tokens, int64_t micro, int64_t window,
                                                 const torch::Device& device);

}  // namespace shapelaw
