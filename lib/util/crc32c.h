#pragma once
// CRC-32C (Castagnoli): detects every single flipped bit and every burst up to 32
// bits, which is what the shard format promises. Hardware instruction on x86 with
// SSE4.2, slicing-by-8 elsewhere.
#include <cstddef>
#include <cstdint>

namespace shapelaw {

uint32_t crc32c(const void* data, size_t size, uint32_t crc = 0);

}  // namespace shapelaw
