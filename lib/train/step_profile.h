#pragma once
// A window of training steps under LibTorch's profiler (its Kineto event collection):
// where a step's time goes, each operator's and, on a GPU, each kernel's calls and total
// time, summed into profile.csv (docs/formats.md). The window is closed with the device
// waited for, so every kernel of its last step is in; steps outside it run unobserved.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace shapelaw {

class StepProfile {
 public:
  // steps: {} (off), {first} or {first, last}; path: where the summary goes (rank 0 only:
  // active = false leaves the profiler off)
  StepProfile(const std::vector<int64_t>& steps, const torch::Device& device, std::string path, bool active);
  ~StepProfile();
  void before_step(int64_t step);  // the first step: the profiler starts
  // the last step: waits for the device, stops, writes the summary; returns a line for
  // the log ("" on any other step)
  std::string after_step(int64_t step);

 private:
  int64_t first_ = 0, last_ = -1;
  torch::Device device_;
  std::string path_;
  bool running_ = false;
};

}  // namespace shapelaw
