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

// Token ids as `width`-byte (2 or 4) little-endian values, the shard and raw-id layouts.
inline void put_tokens(const uint32_t* tokens, size_t count, size_t width, unsigned char* out) {
  if (width == 4) {
    std::memcpy(out, tokens, count * 4);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    out[2 * i] = uint8_t(tokens[i]);
    out[2 * i + 1] = uint8_t(tokens[i] >> 8);
  }
}

}  // namespace shapelaw::le
