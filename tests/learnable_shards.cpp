#include "learnable_shards.h"

#include <random>
#include <vector>

#include "shards/writer.h"

namespace shapelaw::test {

std::string write_learnable_shards(const std::string& dir, char tokenizer_hash_char, int test_documents) {
  TokenizerInfo tok;
  tok.vocab_size = 64;
  tok.eos_id = 0;
  tok.model_sha256 = std::string(64, tokenizer_hash_char);
  tok.sentencepiece_version = "test";
  ShardOptions opt;
  opt.shard_tokens = 4096;
  opt.frame_tokens = 512;
  opt.validation_fraction = 0.1;
  ShardSetWriter writer(dir, tok, opt);
  std::mt19937_64 rng(7);
  for (int d = 0; d < 300 + test_documents; ++d) {
    std::vector<uint32_t> doc;
    uint32_t t = 1 + rng() % 63;
    for (int i = 0; i < 80; ++i) {
      doc.push_back(t);
      t = (rng() % 8 == 0) ? 1 + rng() % 63 : 1 + (t * 5 + 3) % 63;
    }
    if (d < 300) writer.add_document(doc);
    else writer.add_document_to("test", doc.data(), doc.size());
  }
  writer.finish();
  return dir;
}

}  // namespace shapelaw::test
