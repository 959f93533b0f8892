#include "shards/cat.h"

#include <memory>
#include <vector>

#include "shards/dataset.h"
#include "shards/token_io.h"
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

CatResult cat_shards(const std::string& directory, const CatOptions& options, const DocumentSinkFactory& make_sink) {
  TokenDataset dataset = TokenDataset::open(directory);
  const TokenSplit& split = dataset.split(options.split);
  const uint64_t end = options.range.end.value_or(split.num_documents());
  if (end > split.num_documents() || options.range.begin > end)
    throw Error("--range: split '" + options.split + "' of " + dataset.directory() + " has " +
                std::to_string(split.num_documents()) + " documents");
  DocumentSink sink = make_sink(dataset.tokenizer(), dataset.directory() + "/manifest.json");

  CatResult result;
  std::vector<uint32_t> tokens;
  uint64_t start = options.range.begin == 0 ? 0 : split.document_end(options.range.begin - 1);
  for (uint64_t d = options.range.begin; d < end; ++d) {
    uint64_t stop = split.document_end(d);
    tokens.resize(stop - start);
    split.read(start, tokens.size(), tokens.data());
    tokens.pop_back();  // the EOS
    sink.write(tokens);
    result.tokens += tokens.size();
    ++result.documents;
    start = stop;
  }
  sink.close();
  return result;
}

DocumentSink token_document_sink(const std::string& output, TokenFormat format, const TokenizerInfo& tokenizer) {
  auto writer = std::make_shared<TokenDocumentWriter>(output, format, tokenizer);
  return {[writer](const std::vector<uint32_t>& tokens) { writer->write(tokens.data(), tokens.size()); },
          [writer] { writer->close(); }};
}

}  // namespace shapelaw
