#pragma once
// `audit check-table`: recompute the parameter count of every row of a published table
// from D, W, vocabulary and MLP type, flag rows whose stated count differs by more than
// a tolerance, say which counting convention (if any) the stated number matches and
// which width it implies, and list rows that contradict each other (the same scale
// and depth with different widths, or the same D×W with different counts), also
// against the paper's own text and tables unless disabled.
#include <optional>
#include <string>
#include <vector>

#include "audit/arch.h"
#include "audit/report.h"

namespace shapelaw::audit {

struct CheckOptions {
  double tolerance = 0.02;  // |stated/counted − 1| above this is flagged
  int64_t vocab = 50257;    // defaults for columns a table does not have (the paper's setup)
  Mlp mlp = Mlp::gelu;
  Norm norm = Norm::layernorm;
  bool tied = false;
  bool biases = false;
  bool keep_going = false;
  bool paper_claims = true;  // compare (scale, depth) widths with the paper's transcription
};

struct TableRow {
  std::string origin;  // file:line or paper section
  std::string label;   // run / model name
  std::string scale;   // "1B", "7B", ... ("" if none)
  Arch arch;
  double stated = 0;   // stated total parameters (0: none)
  std::optional<double> dcrit_column, ratio_column;
  bool reference = false;  // from the paper transcription, not from the user's files
};

// Rows of one CSV. `from_directory`: a file with no parameter column is skipped (note
// appended) instead of being an error.
std::vector<TableRow> load_table_rows(const std::string& path, const CheckOptions& options, bool from_directory,
                                      std::vector<std::string>* errors, std::vector<std::string>* notes);
// The paper transcription (paper_data) as rows.
std::vector<TableRow> paper_rows(const CheckOptions& options);

ReportTable check_rows(const std::vector<TableRow>& rows, const CheckOptions& options);
// Conflict groups containing at least one non-reference row.
ReportTable conflicts(const std::vector<TableRow>& rows, const CheckOptions& options);

Report check_tables(const std::vector<std::string>& inputs, const CheckOptions& options);

// "7B" from "t10-7B-64x2896" (a token of digits with an optional decimal part, then B).
std::string scale_from_label(const std::string& label);

}  // namespace shapelaw::audit
