#include "tokenizer/sentencepiece_model.h"

#include "tokenizer/bpe_model.h"
#include "shards/tokenizer_id.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace shapelaw {

SentencePieceModel load_sentencepiece_model(const std::string& path) {
  std::string serialized = read_file(path);
  SentencePieceModel model;
  model.path = path;
  model.processor = std::make_unique<sentencepiece::SentencePieceProcessor>();
  auto status = model.processor->LoadFromSerializedProto(serialized);
  if (!status.ok()) throw Error(located(path, 0, "not a sentencepiece model: " + status.ToString()));
  if (model.processor->eos_id() < 0) throw Error(located(path, 0, "the sentencepiece model has no EOS piece"));
  model.info = {uint32_t(model.processor->GetPieceSize()), uint32_t(model.processor->eos_id()),
                sha256_hex(serialized), sentencepiece_version()};
  return model;
}

void check_same_tokenizer(const SentencePieceModel& model, const TokenizerInfo& recorded, const std::string& source) {
  if (model.info.model_sha256 != recorded.model_sha256 || model.info.kind != recorded.kind)
    throw Error(located(model.path, 0, "tokenizer " + describe(model.info) + " is not the one that produced " +
                                           source + ": " + describe(recorded)));
}

}  // namespace shapelaw
