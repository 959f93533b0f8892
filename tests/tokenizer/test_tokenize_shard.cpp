// The data stage as a user runs it: tokenize train-model, tokenize encode | shard write,
// shard inspect/verify, and every bad-input case giving one message and a non-zero exit.
#include "catch.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

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

TEST_CASE("encode output is byte-identical for any thread count and batch size") {
  auto& f = fixture();
  std::string out = f.dir.path() + "/t";
  REQUIRE(run(encode_cmd("-t 1 -o " + out + "1")).exit_code == 0);
  REQUIRE(run(encode_cmd("-t 2 -o " + out + "2")).exit_code == 0);
  REQUIRE(run(encode_cmd("-t 4 -o " + out + "4")).exit_code == 0);
  std::string one = test::read_text(out + "1");
  CHECK(one.size() > 10000);
  CHECK(test::read_text(out + "2") == one);
  CHECK(test::read_text(out + "4") == one);
  // Stdout and a file give the same bytes.
  REQUIRE(run(encode_cmd("-t 2 > " + out + "s")).exit_code == 0);
  CHECK(test::read_text(out + "s") == one);
}

TEST_CASE("tokenize encode piped into shard write gives verified shards recording the tokenizer") {
  auto& f = fixture();
  std::string shards = f.dir.path() + "/shards";
  auto r = run(encode_cmd() + " | " + bin("shard") + " write -q --validation-fraction 0.1 --tokenizer " + f.model +
               " -o " + shards);
  REQUIRE(r.exit_code == 0);
  auto dataset = TokenDataset::open(shards);
  CHECK(dataset.vocab_size() == 400);
  uint64_t documents = dataset.split("train").num_documents() + dataset.split("validation").num_documents();
  CHECK(documents == 400);
  CHECK(dataset.split("validation").num_documents() > 15);
  dataset.check_tokenizer(f.model);
  auto v = run(bin("shard") + " verify -q " + shards);
  CHECK(v.exit_code == 0);
  CHECK_THAT(v.output, Catch::Contains("every checksum matches"));
  auto i = run(bin("shard") + " inspect " + shards);
  CHECK(i.exit_code == 0);
  CHECK_THAT(i.output, Catch::Contains("compression:") && Catch::Contains("vocab 400"));
  auto j = run(bin("shard") + " inspect --json " + shards);
  CHECK_THAT(j.output, Catch::Contains("\"compression_ratio\""));
}

TEST_CASE("a tokenizer that does not match the recorded hash is refused") {
  auto& f = fixture();
  std::string other = f.dir.path() + "/other.model";
  REQUIRE(run(bin("tokenize") + " train-model " + f.corpus + " --vocab-size 350 -q -o " + other).exit_code == 0);
  auto r = run(encode_cmd() + " | " + bin("shard") + " write -q --tokenizer " + other + " -o " + f.dir.path() + "/x");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("other.model") && Catch::Contains("is not the one that produced"));
  CHECK_FALSE(fs::exists(f.dir.path() + "/x/manifest.json"));
  std::string shards = f.dir.path() + "/shards-hash";
  REQUIRE(run(encode_cmd() + " | " + bin("shard") + " write -q -o " + shards).exit_code == 0);
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
  CHECK(r.exit_code == 0);

  r = run(bin("tokenize") + " encode -q -m " + f.corpus + " " + f.corpus);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("not a sentencepiece model"));

  r = run(bin("tokenize") + " encode -q -m " + f.model + " " + f.dir.path() + "/missing.jsonl");
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("missing.jsonl: no such file"));

  // A stream cut short (producer died) is rejected and leaves no manifest.
  std::string stream = f.dir.path() + "/full.tok";
  REQUIRE(run(encode_cmd("-o " + stream)).exit_code == 0);
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
  REQUIRE(run(bin("tokenize") + " encode -q -m " + f.model + " " + big + " -o " + stream).exit_code == 0);
  for (int sig : {SIGKILL, SIGINT}) {
    std::string out = f.dir.path() + "/killed" + std::to_string(sig);
    pid_t pid = fork();
    if (pid == 0) {
      execl(bin("shard").c_str(), "shard", "write", "-q", "--zstd-level", "19", "--shard-tokens", "200000",
            "-o", out.c_str(), stream.c_str(), (char*)nullptr);
      _exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
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
    CHECK(again.exit_code == 0);
    CHECK(run(bin("shard") + " verify -q " + out).exit_code == 0);
  }
}
