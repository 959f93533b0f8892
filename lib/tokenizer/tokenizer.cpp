#include "tokenizer/tokenizer.h"

#include <filesystem>

#include "tokenizer/gpt2_bpe.h"
#include "tokenizer/sentencepiece_model.h"
#include "util/error.h"

namespace shapelaw {

namespace {

class SentencePieceSession : public TokenizerSession {
 public:
  explicit SentencePieceSession(const sentencepiece::SentencePieceProcessor& processor) : processor_(processor) {}
  void encode(std::string_view text, std::vector<uint32_t>& ids) override {
    auto status = processor_.Encode(text, &pieces_);
    if (!status.ok()) throw Error("sentencepiece encoding failed: " + status.ToString());
    ids.insert(ids.end(), pieces_.begin(), pieces_.end());
  }

 private:
  const sentencepiece::SentencePieceProcessor& processor_;
  std::vector<int> pieces_;
};

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& path) : model_(load_sentencepiece_model(path)) {
    info_ = model_.info;
    path_ = path;
  }
  std::unique_ptr<TokenizerSession> session() const override {
    return std::make_unique<SentencePieceSession>(*model_.processor);
  }
  void decode(const std::vector<uint32_t>& tokens, std::string& text) const override {
    std::vector<int> ids(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i] >= info_.vocab_size)
        throw Error("token id " + std::to_string(tokens[i]) + " is outside the vocabulary of " + path_ + " (size " +
                    std::to_string(info_.vocab_size) + ")");
      ids[i] = int(tokens[i]);
    }
#ifdef SHAPELAW_SENTENCEPIECE_ABSL  // where Abseil is sentencepiece's, its vector overload is deprecated
    auto status = model_.processor->Decode(absl::MakeConstSpan(ids), &text);
#else
    auto status = model_.processor->Decode(ids, &text);
#endif
    if (!status.ok()) throw Error("sentencepiece decoding failed: " + status.ToString());
  }

 private:
  SentencePieceModel model_;
};

class Gpt2Session : public TokenizerSession {
 public:
  explicit Gpt2Session(const Gpt2Bpe& bpe) : session_(bpe) {}
  void encode(std::string_view text, std::vector<uint32_t>& ids) override { session_.encode(text, ids); }

 private:
  Gpt2Bpe::Session session_;
};

class Gpt2Tokenizer : public Tokenizer {
 public:
  explicit Gpt2Tokenizer(const std::string& directory) : bpe_(directory) {
    info_ = bpe_.info();
    path_ = directory;
  }
  std::unique_ptr<TokenizerSession> session() const override { return std::make_unique<Gpt2Session>(bpe_); }
  void decode(const std::vector<uint32_t>& ids, std::string& text) const override {
    text.clear();
    bpe_.decode(ids.data(), ids.size(), text);
  }

 private:
  Gpt2Bpe bpe_;
};

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
  if (is_gpt2_tokenizer_directory(path)) return std::make_unique<Gpt2Tokenizer>(path);
  if (std::filesystem::is_directory(path))
    throw Error(located(path, 0, "a directory without encoder.json: a tokenizer is a sentencepiece .model file or a "
                                 "directory of GPT-2's encoder.json and vocab.bpe (scripts/fetch-tokenizer gpt2)"));
  return std::make_unique<SentencePieceTokenizer>(path);
}

void check_same_tokenizer(const Tokenizer& tokenizer, const TokenizerInfo& recorded, const std::string& source) {
  if (tokenizer.info().model_sha256 != recorded.model_sha256 || tokenizer.info().kind != recorded.kind)
    throw Error(located(tokenizer.path(), 0, "tokenizer " + describe(tokenizer.info()) +
                                                 " is not the one that produced " + source + ": " +
                                                 describe(recorded)));
}

}  // namespace shapelaw
