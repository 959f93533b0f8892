#pragma once
// A shard set of random tokens (uniform over the vocabulary, documents of 256..2047
// tokens) for throughput benchmarks and GPU smoke runs that must not depend on a
// corpus or a tokenizer. Written with the ordinary ShardSetWriter.
#include <cstdint>
#include <string>

namespace shapelaw {

void write_synthetic_shards(const std::string& directory, uint64_t tokens, uint32_t vocab_size, uint64_t seed);

}  // namespace shapelaw
