#pragma once
// A transcription of the numbers in "The Depth Delusion" (arXiv 2601.20994) that the
// audit checks: architecture/parameter rows from Tables 2, 3, 7, 9, 10 and the text,
// the flagship-model thresholds of Table 4, Table 8 and appendix C.0.34–C.0.37, and
// Table 10's D_crit column. Sections are cited per row.
#include <string>
#include <utility>
#include <vector>

namespace shapelaw::audit {

struct PaperConfig {
  std::string source;  // "Table 10", "§4.8 text", ...
  std::string scale;   // "1B", "3B", "7B" or "" (small sweep)
  std::string role;    // "best", "over-deep", "sweep", ...
  int depth, width;
  double params;       // as stated, in parameters (0: not stated)
  double loss;         // 0: not stated
};

struct PaperThreshold {
  std::string model;          // as the paper names it
  std::string source;         // "Table 4", "Table 8", "§4.5", "C.0.34", ...
  int width, depth;           // depth 0: not stated there
  double dcrit;               // as printed
  double dcrit_precision;     // the precision the paper prints (0.1, or 1 for "~23")
  std::string verdict;        // as printed ("Delusive", "4x Too Deep", ...)
  double verdict_ratio;       // ratio the verdict states (0: none)
};

const std::vector<PaperConfig>& paper_configs();
const std::vector<PaperThreshold>& paper_thresholds();
// Table 10's (W, D_crit) pairs, one per distinct width.
std::vector<std::pair<double, double>> table10_dcrit_points();

constexpr int kPaperVocab = 50257;  // GPT-2 BPE (§4.1)

}  // namespace shapelaw::audit
