#include "train/cpu_threads.h"

#include <algorithm>
#include <thread>

#include <torch/torch.h>

#include "util/cpu_runtime.h"

namespace shapelaw {

int use_cpu_threads(int requested) {
  const int threads = requested > 0 ? requested : int(std::max(1u, std::thread::hardware_concurrency()));
  torch::set_num_threads(threads);
  set_blas_threads(threads);
  return threads;
}

}  // namespace shapelaw
