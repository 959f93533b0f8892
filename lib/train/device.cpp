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
  const int64_t n = device.is_cuda() ? 8192 : 1024;
  auto opts = torch::TensorOptions().device(device).dtype(bf16 ? torch::kBFloat16 : torch::kFloat32);
  auto gen = at::detail::createCPUGenerator(1234);  // leaves the default generator alone
  auto a = torch::randn({n, n}, gen).to(opts), b = torch::randn({n, n}, gen).to(opts);
  auto c = torch::matmul(a, b);
  compat::cuda_synchronize(device);
  int iters = 0;
  auto t0 = Clock::now();
  do {
    c = torch::matmul(a, b);
    ++iters;
    if (device.is_cuda()) compat::cuda_synchronize(device);
  } while (seconds_since(t0) < 0.3 || iters < 3);
  c.sum().item<double>();
  return 2.0 * double(n) * n * n * iters / seconds_since(t0);
}

}  // namespace shapelaw
