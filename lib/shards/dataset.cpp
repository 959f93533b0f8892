#include "shards/dataset.h"

#include "shards/tokenizer_id.h"

#include <algorithm>
#include <filesystem>

#include "records/versioned_json.h"
#include "shards/shard_file.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace shapelaw {

TokenSplit::TokenSplit(std::string name, std::vector<std::shared_ptr<ShardFile>> shards)
    : name_(std::move(name)), shards_(std::move(shards)) {
  for (const auto& shard : shards_) {
    shard_starts_.push_back(total_tokens_);
    shard_doc_starts_.push_back(total_documents_);
    total_tokens_ += shard->num_tokens();
    total_documents_ += shard->num_documents();
  }
}

void TokenSplit::read(uint64_t offset, size_t count, uint32_t* out) const {
  if (offset + count > total_tokens_)
    throw Error("split '" + name_ + "': read of tokens [" + std::to_string(offset) + ", " +
                std::to_string(offset + count) + ") past its end (" + std::to_string(total_tokens_) + " tokens)");
  size_t s = std::upper_bound(shard_starts_.begin(), shard_starts_.end(), offset) - shard_starts_.begin() - 1;
  while (count > 0) {
    uint64_t within = offset - shard_starts_[s];
    size_t take = std::min<uint64_t>(count, shards_[s]->num_tokens() - within);
    shards_[s]->read(within, take, out);
    out += take; offset += take; count -= take; ++s;
  }
}

std::vector<uint32_t> TokenSplit::read(uint64_t offset, size_t count) const {
  std::vector<uint32_t> tokens(count);
  read(offset, count, tokens.data());
  return tokens;
}

uint64_t TokenSplit::document_end(uint64_t i) const {
  if (i >= total_documents_) throw Error("split '" + name_ + "': no document " + std::to_string(i));
  size_t s = std::upper_bound(shard_doc_starts_.begin(), shard_doc_starts_.end(), i) - shard_doc_starts_.begin() - 1;
  // Shards holding only the middle of a long document have no entries; skip them.
  while (shards_[s]->num_documents() <= i - shard_doc_starts_[s]) ++s;
  return shard_starts_[s] + shards_[s]->document_end(i - shard_doc_starts_[s]);
}

TokenDataset TokenDataset::open(const std::string& path) {
  std::string manifest_path = path;
  if (std::filesystem::is_directory(path)) manifest_path = path + "/manifest.json";
  if (!std::filesystem::exists(manifest_path))
    throw Error(located(manifest_path, 0, "no shard manifest (not a shard directory, or `shard` did not finish)"));
  TokenDataset dataset;
  dataset.directory_ = std::filesystem::path(manifest_path).parent_path().string();
  if (dataset.directory_.empty()) dataset.directory_ = ".";
  std::string text = read_file(manifest_path);
  dataset.manifest_sha256_ = sha256_hex(text);
  try {
    dataset.manifest_ = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(located(manifest_path, 0, std::string("not valid JSON: ") + e.what()));
  }
  const auto& m = dataset.manifest_;
  records::check_versioned(m, manifest_path, kManifestFormat, kManifestVersion);
  auto field = [&](const nlohmann::json& object, const char* key) -> const nlohmann::json& {
    if (!object.is_object() || !object.contains(key))
      throw Error(located(manifest_path, 0, std::string("missing field '") + key + "'"));
    return object.at(key);
  };
  // numbers are checked to be numbers: "token_width": "two" is named, not a JSON type error
  auto count = [&](const nlohmann::json& object, const char* key, const std::string& where) -> uint64_t {
    const auto& v = field(object, key);
    if (!v.is_number_unsigned())
      throw Error(located(manifest_path, 0, "field '" + where + key + "': expected a non-negative integer, got " +
                                                v.dump()));
    return v.get<uint64_t>();
  };
  field(m, "version");  // required here (check_versioned accepts a record without one)
  const auto& tokenizer = field(m, "tokenizer");
  const uint32_t vocab = uint32_t(count(tokenizer, "vocab_size", "tokenizer."));
  const uint32_t eos = uint32_t(count(tokenizer, "eos_id", "tokenizer."));
  if (m.contains("token_width")) {
    const uint64_t width = count(m, "token_width", "");
    if (width != 2 && width != 4)
      throw Error(located(manifest_path, 0, "field 'token_width': expected 2 or 4 (bytes per token), got " +
                                                std::to_string(width)));
  }
  for (const auto& [name, split] : field(m, "splits").items()) {
    std::vector<std::shared_ptr<ShardFile>> shards;
    for (const auto& entry : field(split, "shards")) {
      std::string file = dataset.directory_ + "/" + field(entry, "file").get<std::string>();
      auto shard = std::make_shared<ShardFile>(file);
      if (shard->header().vocab_size != vocab || shard->header().eos_id != eos)
        throw Error(located(file, 0, "vocabulary or EOS id differs from the manifest"));
      if (shard->num_tokens() != count(entry, "tokens", "splits." + name + ".shards[]."))
        throw Error(located(file, 0, "token count differs from the manifest (shard replaced or rewritten?)"));
      shards.push_back(std::move(shard));
    }
    dataset.splits_.push_back(std::make_shared<TokenSplit>(name, std::move(shards)));
  }
  return dataset;
}

int TokenDataset::token_width() const {
  if (manifest_.contains("token_width")) return manifest_.at("token_width").get<int>();
  return vocab_size() <= 65536 ? 2 : 4;  // what the writer chooses
}

std::string TokenDataset::tokenizer_sha256() const {
  return manifest_.at("tokenizer").at("model_sha256").get<std::string>();
}
TokenizerInfo TokenDataset::tokenizer() const {
  const auto& t = manifest_.at("tokenizer");
  // manifests from before GPT-2's tokenizer name no kind: theirs is sentencepiece
  return {vocab_size(), eos_id(), tokenizer_sha256(), t.value("sentencepiece_version", ""),
          t.value("kind", "sentencepiece")};
}
uint32_t TokenDataset::vocab_size() const { return manifest_.at("tokenizer").at("vocab_size").get<uint32_t>(); }
uint32_t TokenDataset::eos_id() const { return manifest_.at("tokenizer").at("eos_id").get<uint32_t>(); }

bool TokenDataset::has_split(const std::string& name) const {
  return std::any_of(splits_.begin(), splits_.end(), [&](const auto& s) { return s->name() == name; });
}

const TokenSplit& TokenDataset::split(const std::string& name) const {
  for (const auto& s : splits_)
    if (s->name() == name) return *s;
  throw Error(located(directory_ + "/manifest.json", 0, "no split '" + name + "'"));
}

void TokenDataset::check_tokenizer(const std::string& model_path) const {
  std::string actual = shapelaw::tokenizer_sha256(model_path);
  if (actual != tokenizer_sha256())
    throw Error(located(model_path, 0, "tokenizer model (sha256 " + actual.substr(0, 12) +
                                           "…) does not match the one recorded in " + directory_ +
                                           "/manifest.json: " + describe(tokenizer())));
}

namespace {
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
}  // namespace

WindowSampler::WindowSampler(const TokenSplit& split, size_t window, uint64_t seed, int rank, int world)
    : split_(split), window_(window), seed_(seed), rank_(rank), world_(world) {
  if (window < 2) throw Error("window must hold at least 2 tokens");
  if (world < 1 || rank < 0 || rank >= world) throw Error("invalid data-parallel rank/world size");
  if (split.num_tokens() < window)
    throw Error("split '" + split.name() + "' has " + std::to_string(split.num_tokens()) +
                " tokens, fewer than one window of " + std::to_string(window));
  // Windows overlap by one token so every token is a target exactly once per epoch.
  total_windows_ = (split.num_tokens() - window) / (window - 1) + 1;
  windows_per_rank_ = total_windows_ / uint64_t(world);
  if (windows_per_rank_ == 0)
    throw Error("split '" + split.name() + "' has fewer windows than data-parallel ranks");
}

// A seeded bijection on [0, total_windows_): a 4-round Feistel network over the
// next even power of two, cycle-walking back into range. O(1) memory for any size.
uint64_t WindowSampler::permuted(uint64_t epoch, uint64_t i) const {
  int bits = 2;
  while ((1ull << bits) < total_windows_) bits += 2;
  const int half = bits / 2;
  const uint64_t mask = (1ull << half) - 1;
  uint64_t key = mix(seed_ ^ mix(epoch + 1));
  uint64_t x = i;
  do {
    uint64_t left = x >> half, right = x & mask;
    for (int round = 0; round < 4; ++round) {
      uint64_t next = left ^ (mix(key + uint64_t(round) * 0x632be59bd9b4e019ull + right) & mask);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= total_windows_);
  return x;
}

uint64_t WindowSampler::next_offset(Cursor& cursor) const {
  if (cursor.index >= windows_per_rank_) {
    cursor.epoch += cursor.index / windows_per_rank_;
    cursor.index %= windows_per_rank_;
  }
  uint64_t window_index = permuted(cursor.epoch, cursor.index * uint64_t(world_) + uint64_t(rank_));
  ++cursor.index;
  return window_index * (window_ - 1);
}

void WindowSampler::next(Cursor& cursor, uint32_t* out) const { split_.read(next_offset(cursor), window_, out); }

}  // namespace shapelaw
