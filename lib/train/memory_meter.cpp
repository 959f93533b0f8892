#include "train/memory_meter.h"

#include <atomic>
#include <cstring>

#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>  // gAlignment (1.13 and 2.x; 2.x no longer includes it from CPUAllocator.h)
#include <c10/core/impl/alloc_cpu.h>

#include "compat/torch_compat.h"

namespace shapelaw {
namespace {

std::atomic<int64_t> cpu_in_use{0}, cpu_peak{0};

void add(int64_t bytes) {
  const int64_t now = cpu_in_use.fetch_add(bytes) + bytes;
  int64_t peak = cpu_peak.load();
  while (now > peak && !cpu_peak.compare_exchange_weak(peak, now)) {
  }
}

// Each block carries its size in a header of one alignment unit, so that the data stays
// aligned and the deleter needs only the data pointer: LibTorch's raw_allocate() (used by
// some kernels) requires the context to be the data pointer itself.
constexpr size_t kHeader = c10::gAlignment;

void free_counted(void* data) {
  if (!data) return;
  char* block = static_cast<char*>(data) - kHeader;
  int64_t bytes;
  std::memcpy(&bytes, block, sizeof bytes);
  cpu_in_use.fetch_sub(bytes);
  c10::free_cpu(block);
}

class CountingAllocator final : public c10::Allocator {
 public:
  // LibTorch 1.13 declares allocate() const, 2.x without const: one of these overrides it.
  c10::DataPtr allocate(size_t n) const { return counted(n); }
  c10::DataPtr allocate(size_t n) { return counted(n); }
  c10::DeleterFnPtr raw_deleter() const override { return &free_counted; }
  // pure virtual from 2.3 on; unused before
  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  static c10::DataPtr counted(size_t n) {
    char* block = static_cast<char*>(c10::alloc_cpu(n + kHeader));
    const int64_t bytes = int64_t(n);
    std::memcpy(block, &bytes, sizeof bytes);
    add(bytes);
    void* data = block + kHeader;
    return c10::DataPtr(data, data, &free_counted, c10::Device(c10::DeviceType::CPU));
  }
};

}  // namespace

void install_cpu_memory_meter() {
  static CountingAllocator* meter = [] {
    auto* a = new CountingAllocator();  // lives as long as the tensors it made
    c10::SetCPUAllocator(a, /*priority=*/100);
    return a;
  }();
  (void)meter;
}

int64_t memory_in_use(const torch::Device& device) {
  if (device.is_cuda()) return compat::cuda_memory_allocated(device);
  return cpu_in_use.load();
}

int64_t peak_memory(const torch::Device& device) {
  if (device.is_cuda()) return compat::cuda_peak_memory_allocated(device);
  return cpu_peak.load();
}

int64_t peak_reserved_memory(const torch::Device& device) {
  return device.is_cuda() ? compat::cuda_peak_memory_reserved(device) : -1;
}

void reset_peak_memory(const torch::Device& device) {
  if (device.is_cuda()) return compat::cuda_reset_peak_memory(device);
  cpu_peak.store(cpu_in_use.load());
}

}  // namespace shapelaw
