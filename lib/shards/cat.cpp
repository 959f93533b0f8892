#include "shards/cat.h"

#include <functional>
#include <memory>
#include <vector>

#include "shards/dataset.h"
#include "shards/token_io.h"
#include "tokenizer/decoder.h"
#include "util/error.h"

namespace shapelaw {

DocumentRange parse_document_range(const std::string& text) {
  auto colon = text.find(':');
  auto number = [&](const std::string& part) -> uint64_t {
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos)
      throw Error("--range '" + text + "': expected a:b with document numbers (a:, :b and : also work)");
    return std::stoull(part);
  };
  if (colon == std::string::npos) number("");  // throws the usage message
  DocumentRange range;
  std::string first = text.substr(0, colon), second = text.substr(colon + 1);
  if (!first.empty()) range.begin = number(first);
  if (!second.empty()) range.end = number(second);
  if (range.end && *range.end < range.begin)
    throw Error("--range '" + text + "': the end is before the beginning");
  return range;
}

CatResult cat_shards(const std::string& directory, const CatOptions& options, const std::string& output) {
  TokenDataset dataset = TokenDataset::open(directory);
  const TokenSplit& split = dataset.split(options.split);
  const uint64_t end = options.range.end.value_or(split.num_documents());
  if (end > split.num_documents() || options.range.begin > end)
    throw Error("--range: split '" + options.split + "' of " + dataset.directory() + " has " +
                std::to_string(split.num_documents()) + " documents");
  const bool text = options.format == "text";
  if (text && options.tokenizer_model.empty())
    throw Error("--format text needs --tokenizer MODEL (the sentencepiece model of these shards)");

  std::unique_ptr<TextDocumentWriter> text_writer;
  std::unique_ptr<TokenDocumentWriter> token_writer;
  if (text) {
    text_writer = std::make_unique<TextDocumentWriter>(options.tokenizer_model, output, TextFormat::text);
    check_same_tokenizer(text_writer->model(), dataset.tokenizer(), dataset.directory() + "/manifest.json");
  } else {
    if (!options.tokenizer_model.empty())
      check_same_tokenizer(load_sentencepiece_model(options.tokenizer_model), dataset.tokenizer(),
                           dataset.directory() + "/manifest.json");
    token_writer = std::make_unique<TokenDocumentWriter>(output, parse_token_format(options.format), dataset.tokenizer());
  }

  CatResult result;
  std::vector<uint32_t> tokens;
  uint64_t start = options.range.begin == 0 ? 0 : split.document_end(options.range.begin - 1);
  for (uint64_t d = options.range.begin; d < end; ++d) {
    uint64_t stop = split.document_end(d);
    tokens.resize(stop - start);
    split.read(start, tokens.size(), tokens.data());
    tokens.pop_back();  // the EOS; each writer marks document ends its own way
    if (text_writer) text_writer->write(tokens);
    else token_writer->write(tokens.data(), tokens.size());
    result.tokens += tokens.size();
    ++result.documents;
    start = stop;
  }
  if (text_writer) text_writer->close();
  else token_writer->close();
  return result;
}

}  // namespace shapelaw
