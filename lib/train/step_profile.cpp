#include "train/step_profile.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#ifndef SHAPELAW_NO_PROFILER
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include "compat/torch_compat.h"
#include "train/metrics.h"
#include "util/atomic_file.h"
#include "util/csv.h"
#include "util/error.h"

namespace shapelaw {

#ifdef SHAPELAW_NO_PROFILER
StepProfile::StepProfile(const std::vector<int64_t>& steps, const torch::Device& device, std::string path, bool)
    : device_(device), path_(std::move(path)) {
  if (!steps.empty()) throw Error("--profile-steps: this train was built without the profiler (SHAPELAW_WITH_PROFILER=OFF)");
}
StepProfile::~StepProfile() = default;
void StepProfile::before_step(int64_t) {}
std::string StepProfile::after_step(int64_t) { return ""; }
#else

namespace profiler = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;
using torch::profiler::impl::ProfilerConfig;
using torch::profiler::impl::ProfilerState;

namespace {

std::set<ActivityType> activities(const torch::Device& device) {
  std::set<ActivityType> a{ActivityType::CPU};
  if (device.is_cuda()) a.insert(ActivityType::CUDA);
  return a;
}

struct Total {
  int64_t calls = 0;
  double us = 0;
};

}  // namespace

StepProfile::StepProfile(const std::vector<int64_t>& steps, const torch::Device& device, std::string path, bool active)
    : device_(device), path_(std::move(path)) {
  if (!active || steps.empty()) return;
  first_ = steps.front(), last_ = steps.back();
}

StepProfile::~StepProfile() {
  if (!running_) return;
  try {
    profiler::disableProfiler();  // a run that stopped inside the window: nothing written
  } catch (...) {  // unwinding already: the error that stopped the run is the one to report
  }
}

void StepProfile::before_step(int64_t step) {
  if (step != first_ || running_) return;
  compat::cuda_synchronize(device_);  // the steps before stay out
  // Prepared here, not at the run's start: preparing turns CUPTI's kernel tracing on, which
  // would slow every step before the window (the ones a throughput measurement times) and
  // fill Kineto's bounded trace buffers before the window is reached. The kernels' times
  // are the GPU's own timestamps, so the missing warm-up step does not bias them.
  profiler::prepareProfiler(ProfilerConfig(ProfilerState::KINETO), activities(device_));
  profiler::enableProfiler(ProfilerConfig(ProfilerState::KINETO), activities(device_));
  running_ = true;
}

std::string StepProfile::after_step(int64_t step) {
  if (step != last_ || !running_) return "";
  compat::cuda_synchronize(device_);
  std::unique_ptr<profiler::ProfilerResult> result = profiler::disableProfiler();
  running_ = false;
  // per device, per name: an operator on the CPU is its host time (a GPU's launches), a
  // kernel on the GPU its device time
  std::map<std::pair<std::string, std::string>, Total> totals;
  std::map<std::string, double> device_us;
  for (const auto& e : result->events()) {
    const std::string dev = e.deviceType() == c10::DeviceType::CUDA ? "cuda" : "cpu";
    Total& t = totals[{dev, e.name()}];
    t.calls++;
    t.us += compat::event_microseconds(e);
    device_us[dev] += compat::event_microseconds(e);
  }
  std::vector<std::pair<std::pair<std::string, std::string>, Total>> rows(totals.begin(), totals.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.first.first != b.first.first ? a.first.first < b.first.first : a.second.us > b.second.us;
  });
  std::ostringstream csv;
  csv << "device,name,calls,total_us,share\n";
  for (const auto& [key, t] : rows)
    csv << key.first << ',' << csv_field(key.second) << ',' << t.calls << ',' << fmt("%.1f", t.us) << ','
        << fmt("%.4f", device_us[key.first] > 0 ? t.us / device_us[key.first] : 0.0) << '\n';
  write_file_atomic(path_, csv.str());
  const std::string where = device_.is_cuda() && device_us.count("cuda") ? "cuda" : "cpu";
  std::string top;
  for (const auto& [key, t] : rows)
    if (key.first == where) {
      top = key.second + " " + fmt("%.0f", 100.0 * t.us / device_us[where]) + "%";
      break;
    }
  return "profile of steps " + std::to_string(first_) + "-" + std::to_string(last_) + ": " + path_ + " (" +
         std::to_string(rows.size()) + " operators and kernels; the largest on " + where + ": " + top + ")";
}

#endif  // SHAPELAW_NO_PROFILER

}  // namespace shapelaw
