#pragma once
// A learnable shard set for the trainer and probe tests: 300 documents of 80 tokens
// following a noisy affine recurrence over a 64-token vocabulary (EOS 0), so the loss
// falls within a few steps. `tokenizer_hash_char` fills the recorded tokenizer hash,
// so two sets can differ only in their tokenizer.
#include <string>

namespace shapelaw::test {

std::string write_learnable_shards(const std::string& dir, char tokenizer_hash_char = 'a');

}  // namespace shapelaw::test
