#include "train/device.h"

#include <chrono>

#include "compat/torch_compat.h"
#include "util/error.h"
#include "util/progress.h"

namespace shapelaw {

RunDevice select_device(const std::string& name, const std::string& precision, const Distributed& dist) {
  RunDevice d;
  if (name == "cuda") {
    const int gpus = int(torch::cuda::device_count());
    if (!torch::cuda::is_available())
      throw Error("--device cuda: no CUDA device available (this LibTorch " + compat::torch_version() +
                  (gpus == 0 ? " sees no GPU" : "") + ")");
    d.device = torch::Device(torch::kCUDA, cuda_device_index(dist.launch, gpus));
  }
  compat::cuda_set_device(d.device);  // before any collective or handle is made
  d.bf16 = precision == "bf16" || (precision == "auto" && d.device.is_cuda());
  if (d.bf16 && !d.device.is_cuda()) throw Error("--precision bf16 needs --device cuda (CPU runs in fp32)");
  return d;
}

double measure_matmul_peak(const torch::Device& device, bool bf16) {
  using Clock = std::chrono::steady_clock;
  torch::NoGradGuard no_grad;
  const bool gpu = device.is_cuda();
  const int64_t n = gpu ? 8192 : 1024, tile = 1024;
  auto opts = torch::TensorOptions().device(device).dtype(bf16 ? torch::kBFloat16 : torch::kFloat32);
  auto gen = at::detail::createCPUGenerator(1234);  // leaves the default generator alone
  // a GPU's 8192^2 operands tiled from 1024^2 random ones: drawing 134M normals on one
  // CPU thread took a second of every run's start
  auto a = torch::randn({tile, tile}, gen).to(opts).repeat({n / tile, n / tile});
  auto b = torch::randn({tile, tile}, gen).to(opts).repeat({n / tile, n / tile});
  auto c = torch::matmul(a, b);
  compat::cuda_synchronize(device);
  auto time_for = [&](double seconds) {  // -> matmuls run, each waited for
    int iters = 0;
    const auto t0 = Clock::now();
    do {
      c = torch::matmul(a, b);
      ++iters;
      if (gpu) compat::cuda_synchronize(device);
    } while (seconds_since(t0) < seconds || iters < 3);
    return iters;
  };
  // An idle GPU's clocks take a while to rise (an H200 at 345 MHz idle, 1980 MHz under
  // load): the first H200 run measured 652-670 TFLOP/s here against the 769-798 of a
  // warmed-up 8192^3 product, which inflated MFU of the measured peak.
  if (gpu) time_for(0.25);
  const auto t0 = Clock::now();
  const int iters = time_for(0.3);
  const double seconds = seconds_since(t0);
  c.sum().item<double>();
  return 2.0 * double(n) * n * n * iters / seconds;
}

}  // namespace shapelaw
