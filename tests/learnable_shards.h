#pragma once
// A learnable shard set for the trainer and probe tests: 300 documents of 80 tokens
// following a noisy affine recurrence over a 64-token vocabulary (EOS 0), so the loss
// falls within a few steps. `tokenizer_hash_char` fills the recorded tokenizer hash,
// so two sets can differ only in their tokenizer. `test_documents` more documents of the
// same kind go to the test split (whatever their hash).
#include <string>

namespace shapelaw::test {

std::string write_learnable_shards(const std::string& dir, char tokenizer_hash_char = 'a', int test_documents = 0);

}  // namespace shapelaw::test
