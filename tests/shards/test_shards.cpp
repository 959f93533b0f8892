#include "catch.h"

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "shards/dataset.h"
#include "shards/inspect.h"
#include "shards/shard_file.h"
#include "shards/writer.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
namespace fs = std::filesystem;

namespace {

// Random documents over a vocabulary that avoids the EOS id.
std::vector<std::vector<uint32_t>> random_documents(int count, uint32_t vocab, uint32_t eos, unsigned seed,
                                                    int max_length = 3000) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> length(1, max_length);
  std::uniform_int_distribution<uint32_t> token(0, vocab - 1);
  std::vector<std::vector<uint32_t>> docs(count);
  for (auto& doc : docs) {
    doc.resize(length(rng));
    for (auto& t : doc) do t = token(rng); while (t == eos);
  }
  return docs;
}

ShardOptions small_options() {
  ShardOptions options;
  options.shard_tokens = 20000;
  options.frame_tokens = 1000;
  options.validation_fraction = 0.1;
  options.test_fraction = 0.05;
  return options;
}

// Writes docs and returns, per split, the expected token stream (docs + EOS in order).
std::map<std::string, std::vector<uint32_t>> write_dataset(const std::string& dir,
                                                           const std::vector<std::vector<uint32_t>>& docs,
                                                           uint32_t vocab, uint32_t eos, ShardOptions options) {
  ShardSetWriter writer(dir, {vocab, eos, std::string(64, 'a'), "test"}, options);
  std::map<std::string, std::vector<uint32_t>> expected;
  for (const auto& doc : docs) {
    writer.add_document(doc);
    auto& stream = expected[split_of_document(doc.data(), doc.size(), options)];
    stream.insert(stream.end(), doc.begin(), doc.end());
    stream.push_back(eos);
  }
  writer.finish();
  return expected;
}

void flip_bit(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(std::streamoff(offset));
  char c;
  f.get(c);
  f.seekp(std::streamoff(offset));
  f.put(char(c ^ 0x10));
}

}  // namespace

TEST_CASE("shards round-trip every token of every split with uint16 and uint32 widths") {
  for (uint32_t vocab : {5000u, 100000u}) {
    test::TempDir dir;
    auto docs = random_documents(300, vocab, 2, 7);
    auto expected = write_dataset(dir.path(), docs, vocab, 2, small_options());
    auto dataset = TokenDataset::open(dir.path());
    CHECK(dataset.manifest().at("token_width") == (vocab <= 65536 ? 2 : 4));
    for (const auto& [name, stream] : expected) {
      const auto& split = dataset.split(name);
      REQUIRE(split.num_tokens() == stream.size());
      CHECK(split.read(0, stream.size()) == stream);
      // Document ends point just past an EOS.
      uint64_t docs_seen = 0;
      for (size_t i = 0; i < stream.size(); ++i)
        if (stream[i] == 2) CHECK(split.document_end(docs_seen++) == i + 1);
      CHECK(split.num_documents() == docs_seen);
    }
    CHECK(dataset.split("train").num_tokens() > 0);
    CHECK(dataset.split("validation").num_tokens() > 0);
  }
}

TEST_CASE("random windows read across frame and shard boundaries equal the source") {
  test::TempDir dir;
  auto docs = random_documents(200, 5000, 2, 11);
  auto expected = write_dataset(dir.path(), docs, 5000, 2, small_options());
  auto dataset = TokenDataset::open(dir.path());
  const auto& split = dataset.split("train");
  REQUIRE(dataset.manifest()["splits"]["train"]["shards"].size() > 3);
  std::mt19937_64 rng(3);
  const auto& stream = expected["train"];
  for (int i = 0; i < 500; ++i) {
    size_t count = 1 + rng() % 4000;
    uint64_t offset = rng() % (stream.size() - count);
    INFO("read " << count << " tokens at " << offset);
    auto got = split.read(offset, count);
    REQUIRE(std::equal(got.begin(), got.end(), stream.begin() + offset));
  }
  CHECK_THROWS_AS(split.read(stream.size() - 1, 2), Error);
}

TEST_CASE("the document split is seeded and independent of document order") {
  ShardOptions options = small_options();
  auto docs = random_documents(2000, 5000, 2, 5, 50);
  std::map<std::string, int> counts;
  std::vector<std::string> forward;
  for (const auto& d : docs) forward.push_back(split_of_document(d.data(), d.size(), options));
  for (const auto& split : forward) counts[split]++;
  // the same documents asked in reverse order and each twice: the same split for each (a
  // rule that counted documents, e.g. every tenth to validation, would move them)
  std::vector<std::string> backward(docs.size());
  for (size_t i = docs.size(); i-- > 0;) {
    backward[i] = split_of_document(docs[i].data(), docs[i].size(), options);
    CHECK(split_of_document(docs[i].data(), docs[i].size(), options) == backward[i]);
  }
  CHECK(backward == forward);
  CHECK(counts["validation"] == Approx(200).margin(60));
  CHECK(counts["test"] == Approx(100).margin(45));
  ShardOptions other = options;
  other.split_seed = 43;
  int moved = 0;
  for (size_t i = 0; i < docs.size(); ++i) moved += forward[i] != split_of_document(docs[i].data(), docs[i].size(), other);
  CHECK(moved > 100);  // another seed gives another split
}

TEST_CASE("the window sampler is deterministic and a permutation per epoch and disjoint across ranks") {
  test::TempDir dir;
  auto docs = random_documents(100, 5000, 2, 13);
  write_dataset(dir.path(), docs, 5000, 2, small_options());
  auto dataset = TokenDataset::open(dir.path());
  const auto& split = dataset.split("train");
  const size_t window = 65;
  WindowSampler sampler(split, window, 42);
  const uint64_t n = sampler.windows_per_epoch();
  REQUIRE(n == (split.num_tokens() - window) / (window - 1) + 1);
  std::set<uint64_t> epoch0, epoch1;
  std::vector<uint64_t> order0;
  WindowSampler::Cursor cursor;
  for (uint64_t i = 0; i < 2 * n; ++i) {
    uint64_t offset = sampler.next_offset(cursor);
    REQUIRE(offset % (window - 1) == 0);
    REQUIRE(offset + window <= split.num_tokens());
    (i < n ? epoch0 : epoch1).insert(offset);
    if (i < n) order0.push_back(offset);
  }
  CHECK(epoch0.size() == n);  // every window exactly once per epoch
  CHECK(epoch1.size() == n);
  CHECK(cursor.epoch == 1);
  // Resuming from a saved cursor replays the same sequence.
  WindowSampler::Cursor replay{0, 10};
  CHECK(sampler.next_offset(replay) == order0[10]);
  // Ranks of a 3-way data-parallel run read disjoint windows.
  std::set<uint64_t> seen;
  for (int rank = 0; rank < 3; ++rank) {
    WindowSampler ranked(split, window, 42, rank, 3);
    WindowSampler::Cursor c;
    for (uint64_t i = 0; i < ranked.windows_per_epoch(); ++i) {
      INFO("rank " << rank << ", window " << i);
      CHECK(seen.insert(ranked.next_offset(c)).second);
    }
  }
  // The window contents are the tokens at the offset.
  std::vector<uint32_t> tokens(window);
  WindowSampler::Cursor c2;
  uint64_t offset = sampler.next_offset(c2);
  WindowSampler::Cursor c3;
  sampler.next(c3, tokens.data());
  CHECK(tokens == split.read(offset, window));
}

TEST_CASE("verify names the file and byte offset of any flipped bit and open rejects damaged metadata") {
  test::TempDir dir;
  auto docs = random_documents(60, 5000, 2, 17);
  ShardOptions options = small_options();
  options.validation_fraction = 0;
  options.test_fraction = 0;
  options.shard_tokens = 1u << 30;
  write_dataset(dir.path(), docs, 5000, 2, options);
  std::string shard = dir.path() + "/train-00000.shard";
  REQUIRE(verify_shards(dir.path(), true).shards == 1);
  std::string pristine = test::read_text(shard);
  const uint64_t size = pristine.size();

  // A bit in the middle of frame 3's compressed data.
  ShardFile file(shard);
  auto frame = file.frames()[3];
  uint64_t inside = frame.offset + frame.compressed_size / 2;
  flip_bit(shard, inside);
  try {
    verify_shards(dir.path(), true);
    FAIL("verify accepted a flipped bit");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains(shard) && Catch::Contains("frame 3") &&
                             Catch::Contains("byte offset " + std::to_string(frame.offset)));
  }
  // Every region: header, a frame, the index, the trailer.
  for (uint64_t offset : {uint64_t(10), uint64_t(70), size - 100, size - 30}) {
    INFO("a bit flipped at byte " << offset << " of " << size);
    test::write_text(shard, pristine);
    flip_bit(shard, offset);
    CHECK_THROWS_AS(verify_shards(dir.path(), true), Error);
  }
  // Truncation.
  test::write_text(shard, pristine.substr(0, size - 5));
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()), Catch::Contains("shard"));
  test::write_text(shard, pristine);
  CHECK(verify_shards(dir.path(), true).tokens > 0);
}

TEST_CASE("a directory without manifest is refused as unfinished") {
  test::TempDir dir;
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()), Catch::Contains("no shard manifest"));
  test::write_text(dir.path() + "/manifest.json", "{\"format\": \"other\"}");
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()),
                    Catch::Contains("manifest.json: field 'format': expected \"shapelaw.shards\", got \"other\""));
  test::write_text(dir.path() + "/manifest.json", "{\"format\": \"shapelaw.shards\", \"version\": 2}");
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()),
                    Catch::Contains("manifest.json: field 'version': 2 is newer than this tool understands (at most 1)"));
  test::write_text(dir.path() + "/manifest.json", "{\"format\": \"shapelaw.shards\"}");
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()), Catch::Contains("missing field 'version'"));
}

TEST_CASE("token ids outside the vocabulary are rejected") {
  test::TempDir dir;
  ShardSetWriter writer(dir.path(), {100, 2, "x", "test"}, small_options());
  std::vector<uint32_t> bad{1, 5, 100};
  CHECK_THROWS_WITH(writer.add_document(bad), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("verify cross-checks the manifest's counts against the shards, and a bad field type is named") {
  // before: a manifest whose split totals or per-shard documents disagreed with the shard
  // trailers verified clean; "token_width": "two" failed as a bare JSON type error
  test::TempDir dir;
  write_dataset(dir.path(), random_documents(60, 5000, 2, 23), 5000, 2, small_options());
  const std::string manifest = dir.path() + "/manifest.json";
  const std::string pristine = test::read_text(manifest);
  REQUIRE(verify_shards(dir.path(), true).shards > 0);
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = nlohmann::json::parse(pristine);
    edit(m);
    test::write_text(manifest, m.dump(1));
  };
  edited([](nlohmann::json& m) { m["splits"]["train"]["tokens"] = m["splits"]["train"]["tokens"].get<uint64_t>() + 1; });
  CHECK_THROWS_WITH(verify_shards(dir.path(), true),
                    Catch::Contains(manifest) && Catch::Contains("splits.train.tokens is ") &&
                        Catch::Contains("its shards hold"));
  edited([](nlohmann::json& m) { m["splits"]["train"]["shards"][0]["documents"] = 1; });
  CHECK_THROWS_WITH(verify_shards(dir.path(), true),
                    Catch::Contains("train-00000.shard: 'documents' is 1, the shard has "));
  edited([](nlohmann::json& m) { m["token_width"] = "two"; });
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()),
                    Catch::Contains(manifest) &&
                        Catch::Contains("field 'token_width': expected a non-negative integer, got \"two\""));
  edited([](nlohmann::json& m) { m["tokenizer"]["vocab_size"] = -3; });
  CHECK_THROWS_WITH(TokenDataset::open(dir.path()), Catch::Contains("field 'tokenizer.vocab_size'"));
  test::write_text(manifest, pristine);
  CHECK(verify_shards(dir.path(), true).shards > 0);
}

TEST_CASE("writing a shard set over an old one replaces it: no stale shard is left behind") {
  // before: a smaller new set left the old set's extra shard files in the directory
  test::TempDir dir;
  ShardOptions options = small_options();
  write_dataset(dir.path(), random_documents(120, 5000, 2, 31), 5000, 2, options);
  auto shard_files = [&] {
    size_t n = 0;
    for (auto& e : fs::directory_iterator(dir.path())) n += e.path().extension() == ".shard";
    return n;
  };
  const size_t before = shard_files();
  REQUIRE(before > 3);
  write_dataset(dir.path(), random_documents(10, 5000, 2, 32), 5000, 2, options);
  TokenDataset data = TokenDataset::open(dir.path());
  size_t listed = 0;
  for (const auto& [name, split] : data.manifest().at("splits").items()) listed += split.at("shards").size();
  CHECK(shard_files() == listed);
  CHECK(listed < before);
  CHECK(verify_shards(dir.path(), true).shards == listed);
}
