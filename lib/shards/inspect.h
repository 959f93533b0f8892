#pragma once
// `shard inspect` and `shard verify` over a shard directory.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace shapelaw {

// Counts per split, bytes on disk, compression ratio against raw uint16/uint32.
nlohmann::json inspect_shards(const std::string& directory);
std::string format_inspection(const nlohmann::json& inspection);

struct VerifyResult {
  uint64_t shards = 0, tokens = 0, bytes = 0;
};
// Checks every checksum (file SHA-256 against the manifest, every frame's CRC-32C,
// document ends at EOS); throws Error naming the file and offset of the first fault.
VerifyResult verify_shards(const std::string& directory, bool quiet);

}  // namespace shapelaw
