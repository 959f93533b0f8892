#include "shards/from_stream.h"

#include "shards/token_stream.h"
#include "util/error.h"
#include "util/progress.h"
#include "shards/tokenizer_id.h"
#include "util/sha256.h"

namespace shapelaw {

nlohmann::json shards_from_stream(const std::string& input, const std::string& directory,
                                  const ShardOptions& options, const std::string& tokenizer_model, bool quiet,
                                  const std::string& test_input) {
  TokenStreamReader reader(input);
  const TokenizerInfo& info = reader.tokenizer();
  if (!tokenizer_model.empty()) {
    std::string actual = tokenizer_sha256(tokenizer_model);
    if (actual != info.model_sha256)
      throw Error(located(tokenizer_model, 0, "tokenizer model (sha256 " + actual.substr(0, 12) +
                                                  "…) is not the one that produced the token stream (sha256 " +
                                                  info.model_sha256.substr(0, 12) + "…)"));
  }
  std::unique_ptr<TokenStreamReader> test_reader;
  if (!test_input.empty()) {
    test_reader = std::make_unique<TokenStreamReader>(test_input);
    const TokenizerInfo& other = test_reader->tokenizer();
    if (other.model_sha256 != info.model_sha256 || other.kind != info.kind || other.vocab_size != info.vocab_size ||
        other.eos_id != info.eos_id)
      throw Error(located(test_input, 0, "--test-input was encoded with another tokenizer (sha256 " +
                                             other.model_sha256.substr(0, 12) + "…) than the main stream (sha256 " +
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
  uint64_t test_documents = 0;
  while (test_reader && test_reader->next_document(tokens)) {
    writer.add_document_to("test", tokens.data(), tokens.size());
    ++test_documents;
  }
  progress.finish(reader.bytes_read(), documents + test_documents, "documents");
  nlohmann::json provenance = {{"input", input}};
  if (test_reader) provenance["test_input"] = {{"path", test_input}, {"documents", test_documents}};
  return writer.finish(provenance);
}

}  // namespace shapelaw
