#pragma once
// Tensor memory of the run's device, in use now and at its peak since the last reset:
// what `train` reports beside the plan's estimate (summary.json "memory").
// CPU: counted by an allocator wrapped around LibTorch's default one, installed once
// before the tensors to count are allocated (LibTorch 1.13 keeps no CPU statistics).
// CUDA: the caching allocator's own statistics (bytes allocated to tensors, and reserved).
#include <cstdint>

#include <torch/torch.h>

namespace shapelaw {

void install_cpu_memory_meter();  // idempotent
int64_t memory_in_use(const torch::Device& device);
int64_t peak_memory(const torch::Device& device);
// CUDA: the allocator's reserve at its peak (allocated + its fragments); -1 on CPU, where
// the meter counts the tensors' bytes only.
int64_t peak_reserved_memory(const torch::Device& device);
void reset_peak_memory(const torch::Device& device);  // peak := in use

}  // namespace shapelaw
