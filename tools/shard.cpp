// shard: token stream -> zstd shards + manifest; inspect, verify and read back shard
// directories.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>

#include "shards/cat.h"
#include "shards/from_stream.h"
#include "shards/inspect.h"
#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/output.h"
#include "util/command_line.h"
#include "util/tool_main.h"

using namespace shapelaw;

namespace {

// `shard cat`'s output: token ids straight from the shards library, or text through
// the tokenizer (which sits above the shards, so the two meet here). A --tokenizer
// given with a token format is still checked against the manifest.
DocumentSink cat_sink(const std::string& format, const std::string& model_path, const std::string& output,
                      const TokenizerInfo& recorded, const std::string& manifest) {
  if (format != "text") {
    if (!model_path.empty()) check_same_tokenizer(*load_tokenizer(model_path), recorded, manifest);
    return token_document_sink(output, parse_token_format(format), recorded);
  }
  if (model_path.empty())
    throw Error("--format text needs --tokenizer MODEL (the sentencepiece model or GPT-2 directory of these shards)");
  auto writer = std::make_shared<TextDocumentWriter>(model_path, output, TextFormat::text);
  check_same_tokenizer(writer->model(), recorded, manifest);
  return {[writer](const std::vector<uint32_t>& tokens) { writer->write(tokens); }, [writer] { writer->close(); }};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"shard: write, inspect and verify shapelaw token shards"};
  app.set_version_flag("--version", shapelaw::tool_version("shard"));
  app.require_subcommand(1);

  ShardOptions options;
  std::string input = "-", out_dir, tokenizer_model, test_input;
  bool quiet = false;
  auto* write_cmd = app.add_subcommand("write", "read a token stream (from `tokenize encode`) and write shards + manifest.json");
  write_cmd->add_option("input", input, "token stream file ('-' = stdin, the default)")->capture_default_str();
  write_cmd->add_option("-o,--out", out_dir, "output shard directory")->required()->check(directory_output());
  write_cmd->add_option("--shard-tokens", options.shard_tokens, "target tokens per shard file")->capture_default_str();
  write_cmd->add_option("--frame-tokens", options.frame_tokens, "tokens per independent zstd frame (random-access unit)")->capture_default_str();
  write_cmd->add_option("--zstd-level", options.zstd_level, "zstd compression level")->capture_default_str();
  write_cmd->add_option("--seed", options.split_seed, "seed of the document split")->capture_default_str();
  write_cmd->add_option("--validation-fraction", options.validation_fraction, "fraction of documents for validation")->capture_default_str();
  write_cmd->add_option("--test-fraction", options.test_fraction, "fraction of documents for test")->capture_default_str();
  write_cmd->add_option("--tokenizer", tokenizer_model, "check that this tokenizer (sentencepiece model or GPT-2 directory) produced the stream");
  write_cmd->add_option("--test-input", test_input,
                        "a second token stream (same tokenizer) whose documents all go to the test split");
  write_cmd->add_flag("-q,--quiet", quiet, "no progress on stderr");

  std::string dir;
  bool as_json = false;
  auto* inspect_cmd = app.add_subcommand("inspect", "summary of a shard directory: counts, sizes, compression");
  inspect_cmd->add_option("directory", dir, "shard directory (or its manifest.json)")->required();
  inspect_cmd->add_flag("--json", as_json, "print JSON instead of a table");

  auto* verify_cmd = app.add_subcommand("verify", "check every checksum; non-zero exit naming file and offset on the first bad one");
  verify_cmd->add_option("directory", dir, "shard directory (or its manifest.json)")->required();
  verify_cmd->add_flag("-q,--quiet", quiet, "no progress on stderr");

  CatOptions cat;
  std::string range, cat_output = "-", cat_format = "stream", cat_model;
  auto* cat_cmd = app.add_subcommand("cat", "write a split's documents back out: token stream, raw ids or text");
  cat_cmd->add_option("directory", dir, "shard directory (or its manifest.json)")->required();
  cat_cmd->add_option("--split", cat.split, "train, validation or test")->capture_default_str();
  cat_cmd->add_option("--range", range, "documents a:b of the split (half-open, from 0; a: and :b work)");
  cat_cmd->add_option("--format", cat_format,
                      "stream (for tokenize decode / shard write), raw16, raw32 (ids, EOS after each document), "
                      "text (needs --tokenizer)")
      ->check(CLI::IsMember({"stream", "raw16", "raw32", "text"}))
      ->capture_default_str();
  cat_cmd->add_option("--tokenizer", cat_model, "sentencepiece model or GPT-2 directory (checked against the manifest)")
      ->check(CLI::ExistingPath);
  cat_cmd->add_option("-o,--output", cat_output, "output file ('-' = stdout, the default)")->capture_default_str();

  if (const int rc = parse_command_line(app, argc, argv, "shard"); rc >= 0) return rc;
  return tool_main("shard", [&] {
    if (*write_cmd) {
      auto manifest = shards_from_stream(input, out_dir, options, tokenizer_model, quiet, test_input);
      if (!quiet) {
        for (const auto& [name, split] : manifest.at("splits").items())
          std::fprintf(stderr, "shard: %-10s %llu tokens, %llu documents, %zu shards\n", name.c_str(),
                       split.at("tokens").get<unsigned long long>(), split.at("documents").get<unsigned long long>(),
                       split.at("shards").size());
      }
    } else if (*inspect_cmd) {
      auto inspection = inspect_shards(dir);
      std::fputs(as_json ? (inspection.dump(2) + "\n").c_str() : format_inspection(inspection).c_str(), stdout);
    } else if (*cat_cmd) {
      if (!range.empty()) cat.range = parse_document_range(range);
      if (cat_format != "text")
        refuse_binary_on_terminal(cat_output, "pipe it into `tokenize decode -m MODEL`, or use --format text --tokenizer MODEL");
      cat_shards(dir, cat, [&](const TokenizerInfo& recorded, const std::string& manifest) {
        return cat_sink(cat_format, cat_model, cat_output, recorded, manifest);
      });
    } else if (*verify_cmd) {
      auto r = verify_shards(dir, quiet);
      std::printf("shard verify: OK: %llu shards, %llu tokens, %llu bytes, every checksum matches\n",
                  (unsigned long long)r.shards, (unsigned long long)r.tokens, (unsigned long long)r.bytes);
    }
    return 0;
  });
}
