#include "shards/from_stream.h"

#include "shards/token_stream.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace shapelaw {

nlohmann::json shards_from_stream(const std::string& input, const std::string& directory,
                                  const ShardOptions& options, const std::string& tokenizer_model, bool quiet) {
  TokenStreamReader reader(input);
  const TokenizerInfo& info = reader.tokenizer();
  if (!tokenizer_model.empty()) {
    std::string actual = sha256_file_hex(tokenizer_model);
    if (actual != info.model_sha256)
      throw Error(located(tokenizer_model, 0, "tokenizer model (sha256 " + actual.substr(0, 12) +
                                                  "…) is not the one that produced the token stream (sha256 " +
                                                  info.model_sha256.substr(0, 12) + "…)"));
  }
  ShardSetWriter writer(directory, info, options);
  Progress progress("shard", quiet);
  std::vector<uint32_t> tokens;
  uint64_t documents = 0;
  while (reader.next_document(tokens)) {
    writer.add_document(tokens);
    ++documents;
    progress.update(reader.bytes_read(), 0, documents, "documents");
  }
  progress.finish(reader.bytes_read(), documents, "documents");
  return writer.finish({{"input", input}});
}

}  // namespace shapelaw
