// The data stage as a user runs it: tokenize train-model, tokenize encode | shard write,
// shard inspect/verify, and every bad-input case giving one message and a non-zero exit.
#include "catch.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "shards/dataset.h"
#include "shards/shard_file.h"
#include <sys/wait.h>
#include "test_support.h"

using namespace shapelaw;
namespace fs = std::filesystem;
using test::bin;
using test::run;

namespace {

// One small corpus and tokenizer shared by the tests of this file.
struct Fixture {
  test::TempDir dir;
  std::string corpus, model;
  Fixture() {
    corpus = dir.path() + "/corpus.jsonl";
    model = dir.path() + "/tok.model";
    test::write_synthetic_corpus(corpus, 400, 9);
    auto r = run(bin("tokenize") + " train-model " + corpus + " --vocab-size 400 -q -o " + model);
    if (r.exit_code != 0) FAIL(r.output);
  }
};
Fixture& fixture() {
  static Fixture f;
  return f;
}
std::string encode_cmd(const std::string& extra = "") {
  return bin("tokenize") + " encode -q -m " + fixture().model + " " + fixture().corpus + " " + extra;
}

}  // namespace

TEST_CASE("encode output is byte-identical for any thread count, and another batch size gives the same shards") {
  auto& f = fixture();
  std::string out = f.dir.path() + "/t";
  REQUIRE_OK(encode_cmd("-t 1 -o " + out + "1"));
  REQUIRE_OK(encode_cmd("-t 2 -o " + out + "2"));
  REQUIRE_OK(encode_cmd("-t 4 -o " + out + "4"));
  // batches far smaller than the corpus: many batches in flight, reassembled in order
  REQUIRE_OK(encode_cmd("-t 2 --batch-bytes 20000 -o " + out + "b"));
  std::string one = test::read_text(out + "1");
  CHECK(one.size() > 10000);
  CHECK(fs::file_size(fixture().corpus) > 5 * 20000);
  CHECK(test::read_text(out + "2") == one);
  CHECK(test::read_text(out + "4") == one);
  // A block per batch (docs/formats.md): another --batch-bytes frames the stream otherwise,
  // but the documents are the same, and so are the shards written from it
  CHECK(test::read_text(out + "b") != one);
  for (const char* s : {"1", "b"})
    REQUIRE_OK(bin("shard") + " write -q -o " + out + s + ".shards " + out + s);
  int shards = 0;
  for (const auto& entry : fs::directory_iterator(out + "1.shards")) {
    const std::string name = entry.path().filename().string();
    if (name == "manifest.json") continue;  // it names its input file
    INFO(name);
    CHECK(test::read_text(out + "b.shards/" + name) == test::read_text(entry.path().string()));
    ++shards;
  }
  CHECK(shards >= 1);
  // Stdout and a file give the same bytes.
  REQUIRE_OK(encode_cmd("-t 2 > " + out + "s"));
  CHECK(test::read_text(out + "s") == one);
}

TEST_CASE("tokenize encode piped into shard write gives verified shards recording the tokenizer") {
  auto& f = fixture();
  std::string shards = f.dir.path() + "/shards";
  auto r = run(encode_cmd() + " | " + bin("shard") + " write -q --validation-fraction 0.1 --tokenizer " + f.model +
               " -o " + shards);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto dataset = TokenDataset::open(shards);
  CHECK(dataset.vocab_size() == 400);
  uint64_t documents = dataset.split("train").num_documents() + dataset.split("validation").num_documents();
  CHECK(documents == 400);
  CHECK(dataset.split("validation").num_documents() > 15);
  dataset.check_tokenizer(f.model);
  auto v = run(bin("shard") + " verify -q " + shards);
  INFO(v.output);
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.output, Catch::Contains("every checksum matches"));
  auto i = run(bin("shard") + " inspect " + shards);
  INFO(i.output);
  CHECK(i.exit_code == 0);
  CHECK_THAT(i.output, Catch::Contains("compression:") && Catch::Contains("vocab 400"));
  auto j = run(bin("shard") + " inspect --json " + shards);
  CHECK_THAT(j.output, Catch::Contains("\"compression_ratio\""));
}

TEST_CASE("a tokenizer that does not match the recorded hash is refused") {
  auto& f = fixture();
  std::string other = f.dir.path() + "/other.model";
  REQUIRE_OK(bin("tokenize") + " train-model " + f.corpus + " --vocab-size 350 -q -o " + other);
  auto r = run(encode_cmd() + " | " + bin("shard") + " write -q --tokenizer " + other + " -o " + f.dir.path() + "/x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("other.model") && Catch::Contains("is not the one that produced"));
  CHECK_FALSE(fs::exists(f.dir.path() + "/x/manifest.json"));
  std::string shards = f.dir.path() + "/shards-hash";
  REQUIRE_OK(encode_cmd() + " | " + bin("shard") + " write -q -o " + shards);
  CHECK_THROWS_WITH(TokenDataset::open(shards).check_tokenizer(other), Catch::Contains("does not match"));
}

TEST_CASE("bad inputs give one clear message and a non-zero exit") {
  auto& f = fixture();
  std::string bad = f.dir.path() + "/bad.jsonl";
  test::write_text(bad, "{\"text\": \"fine\"}\n{\"text\": oops}\n");
  auto r = run(bin("tokenize") + " encode -q -m " + f.model + " " + bad + " -o " + f.dir.path() + "/bad.tok");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::StartsWith("tokenize: error: " + bad + ":2: malformed JSON"));
  CHECK_FALSE(fs::exists(f.dir.path() + "/bad.tok"));  // no half-written output
  r = run(bin("tokenize") + " encode -q --skip-bad -m " + f.model + " " + bad + " -o " + f.dir.path() + "/bad.tok");
  INFO(r.output);
  CHECK(r.exit_code == 0);

  r = run(bin("tokenize") + " encode -q -m " + f.corpus + " " + f.corpus);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("not a sentencepiece model"));

  r = run(bin("tokenize") + " encode -q -m " + f.model + " " + f.dir.path() + "/missing.jsonl");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("missing.jsonl: no such file"));

  // A stream cut short (producer died) is rejected and leaves no manifest.
  std::string stream = f.dir.path() + "/full.tok";
  REQUIRE_OK(encode_cmd("-o " + stream));
  std::string bytes = test::read_text(stream);
  test::write_text(stream + ".cut", bytes.substr(0, bytes.size() - 40));
  r = run(bin("shard") + " write -q -o " + f.dir.path() + "/cut " + stream + ".cut");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("truncated"));
  CHECK_FALSE(fs::exists(f.dir.path() + "/cut/manifest.json"));
  r = run("echo garbage | " + bin("shard") + " write -q -o " + f.dir.path() + "/g");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("not a shapelaw token stream"));

  r = run(bin("shard") + " verify " + f.dir.path() + "/nowhere");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("no shard manifest"));
  r = run(bin("shard") + " write --frame-tokens 0 -o x");
  CHECK(r.exit_code != 0);
}

TEST_CASE("a shard run killed by SIGKILL or SIGINT leaves no file that looks valid") {
  auto& f = fixture();
  // A large stream that takes a while to shard (the corpus repeated).
  std::string big = f.dir.path() + "/big.jsonl";
  std::string corpus = test::read_text(f.corpus), repeated;
  for (int i = 0; i < 30; ++i) repeated += corpus;
  test::write_text(big, repeated);
  std::string stream = f.dir.path() + "/big.tok";
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + f.model + " " + big + " -o " + stream);
  for (int sig : {SIGKILL, SIGINT}) {
    std::string out = f.dir.path() + "/killed" + std::to_string(sig);
    pid_t pid = fork();
    if (pid == 0) {
      execl(bin("shard").c_str(), "shard", "write", "-q", "--zstd-level", "19", "--shard-tokens", "200000",
            "-o", out.c_str(), stream.c_str(), (char*)nullptr);
      _exit(127);
    }
    // killed once its first shard is under a final name (a fixed sleep could fire before
    // anything was written, or after the run ended, on a loaded or a fast machine)
    auto first_shard = [&] {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(out, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.find(".tmp-") == std::string::npos && name.size() > 6 && name.substr(name.size() - 6) == ".shard")
          return true;
      }
      return false;
    };
    for (int i = 0; i < 3000 && !first_shard(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(first_shard());
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    CHECK_FALSE(fs::exists(out + "/manifest.json"));
    // Every file under a final name is a complete shard; partial data only in temp files.
    for (const auto& entry : fs::directory_iterator(out)) {
      std::string name = entry.path().filename().string();
      if (name.find(".tmp-") != std::string::npos) continue;
      CHECK_NOTHROW(ShardFile(entry.path().string()).verify());
    }
    auto again = run(bin("shard") + " write -q -o " + out + " " + stream);
    INFO(again.output);
    CHECK(again.exit_code == 0);
    CHECK(run(bin("shard") + " verify -q " + out).exit_code == 0);
  }
}

namespace {

// Single-line documents that sentencepiece's nmt_nfkc normalization changes: runs of
// spaces, leading/trailing space, full-width letters, a ligature, a vulgar fraction,
// a decomposed accent, characters the vocabulary lacks (byte fallback).
std::vector<std::string> normalization_texts() {
  std::vector<std::string> texts;
  auto words = test::write_synthetic_corpus(fixture().dir.path() + "/unused.jsonl", 40, 21);
  const char* const extras[] = {"  two  spaces  ", "\xEF\xBC\xA6\xEF\xBD\x95\xEF\xBD\x8C\xEF\xBD\x8C width",
                                "\xEF\xAC\x81nd the \xC2\xBD", "cafe\xCC\x81 na\xC3\xAFve", "\xE6\xBC\xA2\xE5\xAD\x97 \xF0\x9F\x98\x80"};
  for (size_t i = 0; i < words.size(); ++i) {
    std::string line = words[i];
    for (char& c : line)
      if (c == '\n') c = ' ';
    texts.push_back(std::string(extras[i % 5]) + " " + line + " " + extras[(i + 2) % 5]);
  }
  return texts;
}

std::string jsonl_of(const std::vector<std::string>& texts) {
  std::string out;
  for (const auto& t : texts) out += nlohmann::json{{"text", t}}.dump() + "\n";
  return out;
}

}  // namespace

TEST_CASE("text -> encode -> shard -> cat -> decode gives sentencepiece's own normalization of the text") {
  auto& f = fixture();
  const auto texts = normalization_texts();
  std::string corpus = f.dir.path() + "/norm.jsonl", plain = f.dir.path() + "/norm.txt";
  test::write_text(corpus, jsonl_of(texts));
  std::string lines;
  for (const auto& t : texts) lines += t + "\n";
  test::write_text(plain, lines);
  std::string shards = f.dir.path() + "/norm-shards";
  // Every document in train, in input order.
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + f.model + " " + corpus + " | " + bin("shard") +
              " write -q --validation-fraction 0 -o " + shards);
  auto decoded = run(bin("shard") + " cat " + shards + " | " + bin("tokenize") + " decode -m " + f.model);
  INFO(decoded.output);
  REQUIRE(decoded.exit_code == 0);
  // spm_normalize (Debian's sentencepiece package) applies the model's normalizer alone.
  auto expected = run("spm_normalize --model=" + f.model + " " + plain + " 2>/dev/null");
  if (expected.exit_code != 0) {
    WARN("spm_normalize not available: comparing against the expected normalization by hand");
  } else {
    CHECK(decoded.output == expected.output);
  }
  // Whatever the tool, the normalization must have done something and kept the words.
  CHECK(decoded.output.find("  ") == std::string::npos);
  CHECK_THAT(decoded.output, Catch::Contains("Full width") && Catch::Contains("find the 1\xE2\x81\x84" "2") &&
                                 Catch::Contains("\xE6\xBC\xA2\xE5\xAD\x97"));
  // text format of shard cat = cat | decode; jsonl decodes to the same texts.
  auto text = run(bin("shard") + " cat --format text --tokenizer " + f.model + " " + shards);
  CHECK(text.output == decoded.output);
  std::string out = f.dir.path() + "/norm-decoded.jsonl";
  REQUIRE_OK(bin("shard") + " cat " + shards + " | " + bin("tokenize") + " decode --format jsonl -m " + f.model +
              " -o " + out);
  std::string from_jsonl;
  std::istringstream in(test::read_text(out));
  for (std::string line; std::getline(in, line);) from_jsonl += nlohmann::json::parse(line).at("text").get<std::string>() + "\n";
  CHECK(from_jsonl == decoded.output);
  // jsonl is the corpus layout: encoding it again gives the same tokens.
  auto again = run(bin("tokenize") + " encode -q -m " + f.model + " " + out + " | " + bin("shard") + " write -q --validation-fraction 0 -o " + shards + "2");
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  CHECK(TokenDataset::open(shards + "2").split("train").read(0, 2000) == TokenDataset::open(shards).split("train").read(0, 2000));
}

TEST_CASE("shard cat: '-' and a file give the same bytes, and ranges, raw ids and streams agree") {
  auto& f = fixture();
  std::string shards = f.dir.path() + "/cat-shards", d = f.dir.path() + "/cat-";
  REQUIRE_OK(encode_cmd() + " | " + bin("shard") + " write -q --validation-fraction 0.1 --tokenizer " + f.model +
              " -o " + shards);
  auto dataset = TokenDataset::open(shards);
  const auto& train = dataset.split("train");
  REQUIRE_OK(bin("shard") + " cat " + shards + " -o " + d + "file");
  REQUIRE_OK(bin("shard") + " cat " + shards + " -o - > " + d + "stdout");
  CHECK(test::read_text(d + "file") == test::read_text(d + "stdout"));
  // cat | write copies a split, as docs/formats.md says: with --validation-fraction 0 the
  // validation split's documents, in order, become the copy's train split
  REQUIRE_OK(bin("shard") + " cat --split validation " + shards + " | " + bin("shard") +
              " write -q --validation-fraction 0 -o " + d + "copy");
  CHECK(TokenDataset::open(d + "copy").split("train").read(0, dataset.split("validation").num_tokens()) ==
        dataset.split("validation").read(0, dataset.split("validation").num_tokens()));
  CHECK(TokenDataset::open(d + "copy").split("train").num_tokens() == dataset.split("validation").num_tokens());

  // raw16 is the split's tokens exactly (EOS after each document).
  REQUIRE_OK(bin("shard") + " cat --format raw16 " + shards + " > " + d + "raw16");
  REQUIRE_OK(bin("shard") + " cat --format raw32 " + shards + " > " + d + "raw32");
  std::string raw16 = test::read_text(d + "raw16"), raw32 = test::read_text(d + "raw32");
  REQUIRE(raw16.size() == train.num_tokens() * 2);
  REQUIRE(raw32.size() == train.num_tokens() * 4);
  auto all = train.read(0, train.num_tokens());
  bool same = true;
  for (size_t i = 0; i < all.size(); ++i) {
    uint32_t a = uint8_t(raw16[2 * i]) | uint32_t(uint8_t(raw16[2 * i + 1])) << 8, b;
    std::memcpy(&b, raw32.data() + 4 * i, 4);
    same = same && a == all[i] && b == all[i];
  }
  CHECK(same);
  // Every input format decodes to the same text, stdout or file.
  auto text = run(bin("tokenize") + " decode -m " + f.model + " " + d + "file");
  INFO(text.output);
  REQUIRE(text.exit_code == 0);
  CHECK(run(bin("tokenize") + " decode --input-format raw16 -m " + f.model + " < " + d + "raw16").output == text.output);
  CHECK(run(bin("tokenize") + " decode --input-format raw32 -m " + f.model + " " + d + "raw32").output == text.output);
  REQUIRE_OK(bin("tokenize") + " decode -m " + f.model + " -o " + d + "text " + d + "file");
  CHECK(test::read_text(d + "text") == text.output);
  size_t lines = std::count(text.output.begin(), text.output.end(), '\n');
  CHECK(lines == train.num_documents());

  // --range a:b is documents a..b-1 of the full output.
  auto nth_lines = [](const std::string& s, size_t a, size_t b) {
    std::istringstream in(s);
    std::string line, out;
    for (size_t i = 0; std::getline(in, line); ++i)
      if (i >= a && i < b) out += line + "\n";
    return out;
  };
  auto ranged = run(bin("shard") + " cat --range 5:9 --format text --tokenizer " + f.model + " " + shards);
  CHECK(ranged.output == nth_lines(text.output, 5, 9));
  CHECK(run(bin("shard") + " cat --range :3 --format text --tokenizer " + f.model + " " + shards).output ==
        nth_lines(text.output, 0, 3));
  CHECK(run(bin("shard") + " cat --range " + std::to_string(lines - 2) + ": --format text --tokenizer " + f.model +
            " " + shards).output == nth_lines(text.output, lines - 2, lines));
  auto validation = run(bin("shard") + " cat --split validation " + shards + " | " + bin("tokenize") + " decode -m " +
                        f.model + " | head -n 2");
  INFO(validation.output);
  CHECK(validation.exit_code == 0);
  CHECK(std::count(validation.output.begin(), validation.output.end(), '\n') == 2);

  // A split streamed back into shard write is the same split.
  REQUIRE_OK(bin("shard") + " cat " + shards + " | " + bin("shard") + " write -q --validation-fraction 0 -o " + d +
              "copy");
  auto copied = TokenDataset::open(d + "copy");
  const auto& copy = copied.split("train");
  CHECK(copy.num_tokens() == train.num_tokens());
  CHECK(copy.read(0, copy.num_tokens()) == all);
}

TEST_CASE("shard cat and tokenize decode refuse what they cannot do, naming why") {
  auto& f = fixture();
  std::string shards = f.dir.path() + "/cat-bad";
  REQUIRE_OK(encode_cmd() + " | " + bin("shard") + " write -q -o " + shards);
  std::string other = f.dir.path() + "/other-decode.model";
  REQUIRE_OK(bin("tokenize") + " train-model " + f.corpus + " --vocab-size 350 -q -o " + other);
  auto r = run(bin("shard") + " cat " + shards + " | " + bin("tokenize") + " decode -m " + other);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("other-decode.model") && Catch::Contains("is not the one that produced the token stream"));
  r = run(bin("shard") + " cat --format text --tokenizer " + other + " " + shards);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("manifest.json"));
  r = run(bin("shard") + " cat --format text " + shards);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--format text needs --tokenizer"));
  r = run(bin("shard") + " cat --range 3 " + shards);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--range '3'"));
  r = run(bin("shard") + " cat --range 0:100000 " + shards + " > /dev/null");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("split 'train'") && Catch::Contains("documents"));
  r = run(bin("shard") + " cat --split nope " + shards + " > /dev/null");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("no split 'nope'"));
  // Raw ids: a length that is not whole tokens, an id outside the vocabulary.
  r = run("printf 'abc' | " + bin("tokenize") + " decode --input-format raw16 -m " + f.model);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("not a multiple of 2"));
  r = run("printf '\\377\\377' | " + bin("tokenize") + " decode --input-format raw16 -m " + f.model);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("token id 65535 is outside the vocabulary"));
  r = run("echo hello | " + bin("tokenize") + " decode -m " + f.model);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("not a shapelaw token stream"));
}

TEST_CASE("shard write --test-input puts every document of a second stream in the test split") {
  auto& f = fixture();
  std::string held = f.dir.path() + "/held.jsonl", plain = f.dir.path() + "/plain", with = f.dir.path() + "/with";
  test::write_synthetic_corpus(held, 12, 77);
  std::string write = bin("shard") + " write -q --validation-fraction 0.1 --tokenizer " + f.model;
  REQUIRE_OK(encode_cmd() + " | " + write + " -o " + plain);
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + f.model + " " + held + " -o " + held + ".tok");
  auto r = run(encode_cmd() + " | " + write + " --test-input " + held + ".tok -o " + with);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto a = TokenDataset::open(plain), b = TokenDataset::open(with);
  CHECK(a.split("test").num_documents() == 0);
  CHECK(b.split("test").num_documents() == 12);
  // The hashed splits are untouched.
  for (const char* name : {"train", "validation"}) {
    const auto &x = a.split(name), &y = b.split(name);
    REQUIRE(x.num_tokens() == y.num_tokens());
    CHECK(x.read(0, x.num_tokens()) == y.read(0, y.num_tokens()));
  }
  CHECK(b.manifest().at("provenance").at("test_input").at("documents") == 12);
  auto text = run(bin("shard") + " cat --split test --format text --tokenizer " + f.model + " " + with);
  CHECK(std::count(text.output.begin(), text.output.end(), '\n') == 12);
  CHECK_THAT(text.output, Catch::Contains(" d11"));
  // Another tokenizer's stream is refused.
  std::string other = f.dir.path() + "/other-test.model";
  REQUIRE_OK(bin("tokenize") + " train-model " + f.corpus + " --vocab-size 350 -q -o " + other);
  REQUIRE_OK(bin("tokenize") + " encode -q -m " + other + " " + held + " -o " + held + ".other");
  r = run(encode_cmd() + " | " + write + " --test-input " + held + ".other -o " + f.dir.path() + "/mixed");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--test-input was encoded with another tokenizer"));
}

TEST_CASE("tokenize train-model on a tiny corpus works, or says the vocabulary is too large for it") {
  auto& f = fixture();
  std::string tiny = f.dir.path() + "/tiny.jsonl", model = f.dir.path() + "/tiny.model";
  test::write_synthetic_corpus(tiny, 6, 5);  // a few dozen lines, below sentencepiece's 100
  auto r = run(bin("tokenize") + " train-model " + tiny + " --vocab-size 300 -q -o " + model);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("trainer_interface") == std::string::npos);
  CHECK(run(bin("tokenize") + " encode -q -m " + model + " " + tiny + " -o " + f.dir.path() + "/tiny.tok").exit_code == 0);
  // -o - is stdout: the same model bytes as a file, and no file named '-'
  test::TempDir cwd;
  REQUIRE_OK(bin("tokenize") + " train-model " + tiny + " --vocab-size 300 --threads 1 -q -o " + model + "1");
  REQUIRE_OK("cd " + cwd.path() + " && " + bin("tokenize") + " train-model " + tiny +
              " --vocab-size 300 --threads 1 -q -o - > " + model + "-stdout");
  CHECK(test::read_text(model + "-stdout") == test::read_text(model + "1"));
  CHECK_FALSE(fs::exists(cwd.path() + "/-"));
  r = run(bin("tokenize") + " train-model " + tiny + " --vocab-size 4096 -q -o " + model + "2");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("is too small for --vocab-size 4096") &&
                           Catch::Contains("lower --vocab-size or train on more text"));
  CHECK_FALSE(fs::exists(model + "2"));
}

TEST_CASE("a token stream with a flipped bit in a block, or in its end block, is refused, nothing written") {
  // the stream's framing (docs/formats.md): a 128-byte header, then blocks of
  // u32 count, u32 documents, u32 crc32c(tokens), tokens; then the end block
  auto& f = fixture();
  const std::string stream = f.dir.path() + "/crc.tok";
  REQUIRE_OK(encode_cmd("-o " + stream));
  const std::string good = test::read_text(stream);
  REQUIRE(good.size() > 128 + 12 + 40 + 32);
  std::string token_flipped = good;
  token_flipped[128 + 12 + 4 * 5] ^= 0x01;  // the sixth token of the first block
  std::string totals_flipped = good;
  totals_flipped[good.size() - 20] ^= 0x01;  // the end block's token total
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"token", token_flipped, "token stream block checksum mismatch"},
      {"totals", totals_flipped, "token stream end block does not match the data read"}};
  for (const auto& [name, bytes, message] : cases) {
    INFO(name);
    const std::string path = f.dir.path() + "/crc-" + name + ".tok", out = f.dir.path() + "/crc-" + name;
    test::write_text(path, bytes);
    auto r = run(bin("shard") + " write -q -o " + out + " " + path);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.output, Catch::Contains(path) && Catch::Contains(message));
    CHECK_FALSE(fs::exists(out + "/manifest.json"));
  }
  REQUIRE_OK(bin("shard") + " write -q -o " + f.dir.path() + "/crc-good " + stream);  // the unflipped stream
}
