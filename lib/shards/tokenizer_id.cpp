#include "shards/tokenizer_id.h"

#include <sys/stat.h>

#include "util/atomic_file.h"
#include "util/sha256.h"

namespace shapelaw {

bool is_gpt2_tokenizer_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && stat((path + "/encoder.json").c_str(), &st) == 0;
}

std::string tokenizer_sha256(const std::string& path) {
  if (!is_gpt2_tokenizer_directory(path)) return sha256_file_hex(path);
  return sha256_hex(read_file(path + "/encoder.json") + read_file(path + "/vocab.bpe"));
}

std::string describe(const TokenizerInfo& info) {
  return (info.kind.empty() ? std::string("sentencepiece") : info.kind) + " (sha256 " +
         info.model_sha256.substr(0, 12) + "…)";
}

}  // namespace shapelaw
