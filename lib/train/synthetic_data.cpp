#include "train/synthetic_data.h"

#include <random>
#include <vector>

#include "shards/writer.h"
#include "util/error.h"

namespace shapelaw {

void write_synthetic_shards(const std::string& directory, uint64_t tokens, uint32_t vocab_size, uint64_t seed) {
  if (vocab_size < 2) throw Error("synthetic shards: vocab_size must be >= 2");
  TokenizerInfo tok;
  tok.vocab_size = vocab_size;
  tok.eos_id = 0;
  tok.model_sha256 = std::string(64, '0');  // no tokenizer: an all-zero hash
  tok.sentencepiece_version = "synthetic";
  tok.kind = "synthetic";
  ShardOptions options;
  options.split_seed = seed;
  options.validation_fraction = 0.02;
  ShardSetWriter writer(directory, tok, options);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<uint32_t> token(1, vocab_size - 1), length(256, 2047);
  std::vector<uint32_t> doc;
  for (uint64_t written = 0; written < tokens;) {
    doc.resize(length(rng));
    for (auto& t : doc) t = token(rng);
    writer.add_document(doc);
    written += doc.size() + 1;
  }
  writer.finish({{"synthetic", {{"tokens", tokens}, {"seed", seed}}}});
}

}  // namespace shapelaw
