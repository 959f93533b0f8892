#pragma once
// Data table loading for fit-law: summary.json files (or directories of them),
// CSV and JSONL tables, with a column mapping. Every row remembers the file and
// line it came from, so bad input is reported as "file:line: what".
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace shapelaw::fit {

// Canonical fields a row can carry. Only the response (loss, or tau for a probe-grads
// table) is required; depth and width only by the laws that use them (and by --tau).
struct Row {
  std::string source;  // file path
  long long line = 0;  // 1-based line (0 for a whole-file summary.json)
  std::string run, group;
  std::string tokenizer;     // its hash (summary.json tokenizer_sha256), "" when unknown
  std::string tokenizer_kind;  // gpt2, sentencepiece (summary.json tokenizer_kind), "" when unknown
  double depth = 0, width = 0;  // 0: absent (a params/tokens/loss table)
  double loss = 0;           // response: loss (or tau for tau tables)
  double loss_se = -1;       // < 0: absent
  double params = -1;        // total parameter count, < 0: absent
  double params_nonemb = -1; // non-embedding count, < 0: absent
  double tokens = -1;        // < 0: absent
  double compute = -1;       // < 0: absent
  double N = 0, T = 0;       // resolved model inputs (see resolve_inputs)
  // The options that fix the math of the run (summary.json binding_config, or config less
  // the non-binding keys); for a CSV/JSONL row, every column not read as run, group,
  // response, loss_se or tokenizer. --best-of and the replicate check compare these.
  nlohmann::json binding = nlohmann::json::object();
  bool binding_from_summary = false;
};

// Rows sorted by (depth, width, params, params_nonembedding, tokens, compute, loss, run,
// source, line): the fit sees the same rows in the same order however the inputs were
// listed, so its floating-point sums, and with them its answer, do not depend on that order.
void canonical_order(std::vector<Row>& rows);

// One mapping entry: canonical field <- source column (or dotted JSON path),
// multiplied by scale (e.g. "tokens=tokens_b*1e9").
struct ColumnSpec {
  std::string column;
  double scale = 1.0;
};

struct LoadOptions {
  std::map<std::string, ColumnSpec> columns;  // explicit --col mappings
  bool tau_table = false;      // response is the column "tau" (probe-grads table)
  bool skip_bad_rows = false;  // warn and skip instead of failing
  // Losses per token from different tokenizers are different quantities: rows naming more
  // than one tokenizer are refused, unless this (then a warning).
  bool allow_mixed_tokenizers = false;
};

struct LoadResult {
  std::vector<Row> rows;
  std::vector<std::string> files;     // every file read, in order
  std::vector<std::string> warnings;  // skipped rows, duplicates
};

// Canonical field names accepted by --col.
const std::vector<std::string>& canonical_fields();
// Parses "field=column[*scale]"; throws Error on a bad spec or unknown field.
std::pair<std::string, ColumnSpec> parse_column_spec(const std::string& spec);

// Expands directories (recursively, every summary.json / *.csv / *.jsonl inside)
// and glob patterns; throws Error naming a path that matches nothing.
std::vector<std::string> expand_inputs(const std::vector<std::string>& inputs);

LoadResult load_tables(const std::vector<std::string>& inputs, const LoadOptions& options);

// How N is chosen. "auto": an explicitly mapped column (--col params_nonembedding=…, else
// --col params=…), else the non-embedding count when every row has one, else 12·D·W² when
// every row has a shape, else the total count when every row has one. Or "12dw2", "total",
// "nonembedding". T comes from tokens, else compute/(6N).
struct NChoice {
  std::string source;  // what N is: 12dw2, total or nonembedding
  std::string reason;  // why (stated in every output)
};
NChoice resolve_inputs(std::vector<Row>& rows, const std::string& n_source,
                       const std::map<std::string, ColumnSpec>& explicit_columns = {});

}  // namespace shapelaw::fit
