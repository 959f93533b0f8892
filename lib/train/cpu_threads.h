#pragma once
// Threads of a LibTorch CPU run (train, probe-grads): `requested`, or every core when 0,
// given to ATen's intra-op pool and to OpenBLAS's own pool, which torch::set_num_threads
// does not reach (util/cpu_runtime.h). Returns the count used.
namespace shapelaw {

int use_cpu_threads(int requested);

}  // namespace shapelaw
