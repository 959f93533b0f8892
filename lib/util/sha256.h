#pragma once
// SHA-256 for provenance hashes (tokenizer model, manifests, fit inputs): the
// same hex digest `sha256sum` prints, so a user can check a record by hand.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace shapelaw {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  std::array<uint8_t, 32> digest();  // finishes; the object must not be reused
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  uint32_t state_[8];
  uint8_t buffer_[64];
  uint64_t total_bytes_ = 0;
  size_t buffered_ = 0;
};

std::string sha256_hex(std::string_view data);
std::string sha256_file_hex(const std::string& path);  // throws Error naming the file

}  // namespace shapelaw
