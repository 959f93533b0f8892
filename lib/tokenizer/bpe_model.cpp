#include "tokenizer/bpe_model.h"

#include <random>
#include <regex>
#include <thread>
#include <unordered_map>
#include <utility>

#include <sentencepiece_trainer.h>

#include "util/output.h"
#include "util/error.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace shapelaw {

std::string sentencepiece_version() { return SHAPELAW_SENTENCEPIECE_VERSION; }

namespace {

// The status type sentencepiece declares for SentenceIterator::status(): util::Status in
// Debian 12's and 13's, absl::Status in sid's 0.2.2; a default-constructed one is OK in both.
using SentencePieceStatus = decltype(std::declval<const sentencepiece::SentenceIterator&>().status());

// Hands the sampled lines to the sentencepiece trainer one by one.
class SampleIterator : public sentencepiece::SentenceIterator {
 public:
  explicit SampleIterator(const std::vector<std::string>& lines) : lines_(lines) {}
  bool done() const override { return index_ >= lines_.size(); }
  void Next() override { ++index_; }
  const std::string& value() const override { return lines_[index_]; }
  SentencePieceStatus status() const override { return {}; }

 private:
  const std::vector<std::string>& lines_;
  size_t index_ = 0;
};

}  // namespace

BpeTrainingResult train_bpe_model(const std::vector<std::string>& inputs, const std::string& model_path,
                                  const BpeTrainingOptions& options) {
  if (options.vocab_size < 300 && options.byte_fallback)
    throw Error("--vocab-size must be at least 300 with byte fallback (256 byte pieces + specials + merges)");
  // Reservoir sampling (algorithm R) over lines keeps memory bounded by sample_lines.
  BpeTrainingResult result;
  std::vector<std::string> sample;
  std::mt19937_64 rng(options.seed);
  DocumentReader reader(inputs, options.reader);
  Progress progress("tokenize train-model: sampling", options.quiet);
  Document document;
  while (reader.next(document)) {
    size_t start = 0;
    while (start < document.text.size()) {
      size_t end = document.text.find('\n', start);
      if (end == std::string::npos) end = document.text.size();
      if (end > start) {
        std::string line = document.text.substr(start, std::min<size_t>(end - start, options.max_sentence_length));
        ++result.lines_seen;
        if (sample.size() < options.sample_lines) {
          sample.push_back(std::move(line));
        } else {
          uint64_t j = std::uniform_int_distribution<uint64_t>(0, result.lines_seen - 1)(rng);
          if (j < options.sample_lines) sample[j] = std::move(line);
        }
      }
      start = end + 1;
    }
    progress.update(reader.raw_bytes_read(), reader.total_raw_bytes(), reader.documents(), "documents");
  }
  progress.finish(reader.raw_bytes_read(), reader.documents(), "documents");
  result.documents = reader.documents();
  result.skipped = reader.skipped();
  result.lines_sampled = sample.size();
  if (sample.empty()) throw Error("no text to train a tokenizer on");

  int threads = options.threads > 0 ? options.threads : int(std::thread::hardware_concurrency());
  std::unordered_map<std::string, std::string> args = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", std::to_string(options.character_coverage)},
      {"byte_fallback", options.byte_fallback ? "true" : "false"},
      {"normalization_rule_name", options.normalization},
      {"max_sentence_length", std::to_string(options.max_sentence_length)},
      // sentencepiece refuses a sample size in 1..100 (its check trainer_interface.cc:76);
      // 0 means "every sentence", which is the same thing for a sample this small.
      {"input_sentence_size", std::to_string(sample.size() > 100 ? sample.size() : 0)},
      {"shuffle_input_sentence", "false"},  // already a seeded sample
      {"num_threads", std::to_string(threads)},
      {"unk_id", "0"}, {"bos_id", "1"}, {"eos_id", "2"}, {"pad_id", "-1"},
      {"minloglevel", options.quiet ? "2" : "1"},
      {"hard_vocab_limit", "true"},
  };
  SampleIterator iterator(sample);
  std::string serialized;
  auto status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &serialized);
  if (!status.ok()) {
    // A small corpus cannot fill a large vocabulary; say so in the user's terms.
    std::smatch most;
    const std::string message = status.ToString();
    if (std::regex_search(message, most, std::regex("Vocabulary size too high .*<= ([0-9]+)")))
      throw Error("the training text (" + std::to_string(sample.size()) + " lines) is too small for --vocab-size " +
                  std::to_string(options.vocab_size) + ": sentencepiece can make at most " + most[1].str() +
                  " pieces from it; lower --vocab-size or train on more text");
    throw Error("sentencepiece training failed: " + message);
  }
  write_output(model_path, serialized);  // "-": stdout
  result.model_sha256 = sha256_hex(serialized);
  return result;
}

}  // namespace shapelaw
