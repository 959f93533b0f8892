#pragma once
// Fixed-width little-endian fields for the binary formats. The project targets
// little-endian hosts (x86-64, aarch64); the static_assert makes that explicit.
#include <cstdint>
#include <cstring>

namespace shapelaw::le {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "shapelaw formats assume a little-endian host");

inline void put32(unsigned char* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void put64(unsigned char* p, uint64_t v) { std::memcpy(p, &v, 8); }
inline uint32_t get32(const unsigned char* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
inline uint64_t get64(const unsigned char* p) { uint64_t v; std::memcpy(&v, p, 8); return v; }

}  // namespace shapelaw::le
