#include "audit/paper_data.h"

#include <map>

namespace shapelaw::audit {

const std::vector<PaperConfig>& paper_configs() {
  static const std::vector<PaperConfig> rows = {
      // Table 9 (C.0.30): baseline sweep, params in M.
      {"Table 9", "", "sweep", 2, 256, 27.5e6, 4.332},
      {"Table 9", "", "sweep", 8, 256, 32.2e6, 4.039},
      {"Table 9", "", "sweep", 16, 256, 38.5e6, 3.929},
      {"Table 9", "", "sweep", 2, 512, 58.1e6, 3.945},
      {"Table 9", "", "sweep", 4, 512, 64.4e6, 3.793},
      {"Table 9", "", "sweep", 8, 512, 77.0e6, 3.543},
      {"Table 9", "", "sweep", 12, 512, 89.6e6, 3.473},
      {"Table 9", "", "sweep", 16, 512, 102.2e6, 3.435},
      {"Table 9", "", "sweep", 24, 512, 127.4e6, 3.468},
      {"Table 9", "", "sweep", 2, 1024, 128.7e6, 3.542},
      {"Table 9", "", "sweep", 32, 512, 152.6e6, 3.441},
      {"Table 9", "", "sweep", 8, 1024, 204.3e6, 3.406},
      {"Table 9", "", "sweep", 2, 1536, 211.9e6, 3.558},
      {"Table 9", "", "sweep", 4, 1536, 268.6e6, 3.398},
      {"Table 9", "", "sweep", 16, 1024, 305.0e6, 3.128},
      {"Table 9", "", "sweep", 8, 1536, 381.9e6, 3.100},
      {"Table 9", "", "sweep", 12, 1536, 495.2e6, 3.067},
      {"Table 9", "", "sweep", 16, 1536, 608.5e6, 3.049},
      // Table 2 (§4.3).
      {"Table 2", "", "sweep", 16, 512, 102.1e6, 3.435},
      {"Table 2", "", "sweep", 24, 512, 127.3e6, 3.468},
      {"Table 2", "", "sweep", 32, 512, 152.4e6, 3.441},
      // §4.5: best architecture.
      {"§4.5 text", "", "best", 16, 1536, 609e6, 3.049},
      // Table 10 (C.0.31), params in B.
      {"Table 10", "1B", "sweep", 12, 4096, 1.04e9, 2.847},
      {"Table 10", "1B", "best", 24, 2896, 1.03e9, 2.821},
      {"Table 10", "1B", "sweep", 48, 2048, 1.02e9, 2.839},
      {"Table 10", "1B", "sweep", 64, 1776, 1.01e9, 2.897},
      {"Table 10", "1B", "over-deep", 80, 1584, 1.00e9, 2.978},
      {"Table 10", "3B", "sweep", 16, 4096, 2.90e9, 2.553},
      {"Table 10", "3B", "sweep", 24, 3328, 3.00e9, 2.534},
      {"Table 10", "3B", "best", 40, 2560, 3.05e9, 2.519},
      {"Table 10", "3B", "sweep", 56, 2176, 3.02e9, 2.585},
      {"Table 10", "3B", "over-deep", 72, 1920, 3.01e9, 2.681},
      {"Table 10", "7B", "best", 32, 4096, 6.92e9, 2.298},
      {"Table 10", "7B", "over-deep", 64, 2896, 7.08e9, 2.417},
      // Table 3 (§4.6): best and over-deep per scale (no parameter counts printed).
      {"Table 3", "1B", "best", 24, 1792, 0, 2.821},
      {"Table 3", "1B", "over-deep", 80, 1024, 0, 2.978},
      {"Table 3", "3B", "best", 40, 2432, 0, 2.519},
      {"Table 3", "3B", "over-deep", 72, 1792, 0, 2.681},
      {"Table 3", "7B", "best", 32, 4096, 0, 2.298},
      {"Table 3", "7B", "over-deep", 64, 2816, 0, 2.417},
      // §4.6 text: "64 layers with 7.08B parameters underperforms 32 layers with 6.92B".
      {"§4.6 text", "7B", "best", 32, 4096, 6.92e9, 2.298},
      {"§4.6 text", "7B", "over-deep", 64, 0, 7.08e9, 2.417},
      // §4.8 text and the abstract: 7B-Optimal 32×4096 (6.86B), 7B-Deep 64×2816 (6.38B).
      {"§4.8 text", "7B", "best", 32, 4096, 6.86e9, 0},
      {"§4.8 text", "7B", "over-deep", 64, 2816, 6.38e9, 0},
      // Table 7 (C.0.22).
      {"Table 7", "7B", "best", 32, 4096, 6.92e9, 2.298},
      {"Table 7", "7B", "over-deep", 64, 2896, 7.08e9, 2.417},
  };
  return rows;
}

const std::vector<PaperThreshold>& paper_thresholds() {
  static const std::vector<PaperThreshold> rows = {
      {"GPT-3 (175B)", "Table 4", 12288, 96, 22.9, 0.1, "Delusive", 0},
      {"PaLM (540B)", "Table 4", 18432, 118, 23.9, 0.1, "Delusive", 0},
      {"Llama-3 (70B)", "Table 4", 8192, 80, 21.9, 0.1, "Delusive", 0},
      {"GPT-3 (175B)", "Table 8", 12288, 96, 23, 1, "4x Too Deep", 4.0},
      {"PaLM (540B)", "Table 8", 18432, 118, 24, 1, "5x Too Deep", 5.0},
      {"Llama 2 (70B)", "Table 8", 8192, 80, 22, 1, "3.6x Too Deep", 3.6},
      {"GPT-3 (175B)", "§4.5 text", 12288, 96, 23, 1, "far exceeds", 0},
      {"GPT-3", "C.0.34", 12288, 0, 22.6, 0.1, "", 0},
      {"PaLM", "C.0.35", 18432, 0, 23.6, 0.1, "", 0},
      {"Llama 2", "C.0.36", 8192, 0, 21.6, 0.1, "", 0},
      {"Mistral 7B", "C.0.37", 4096, 0, 20.0, 0.1, "", 0},
      {"§4.2 W=512", "§4.2", 512, 0, 15.2, 0.1, "", 0},
      {"§4.2 W=1024", "§4.2", 1024, 0, 16.9, 0.1, "", 0},
      {"§4.2 W=1536", "§4.2", 1536, 0, 17.8, 0.1, "", 0},
      {"§4.8 1B transition", "§4.8 (\"D_crit ∝ W^0.44\")", 2816, 0, 24.1, 0.1, "", 0},
  };
  return rows;
}

std::vector<std::pair<double, double>> table10_dcrit_points() {
  std::map<int, double> by_width;
  static const int dcrit[][2] = {{4096, 28}, {2896, 24}, {2048, 22}, {1776, 21}, {1584, 20},
                                 {3328, 26}, {2560, 23}, {2176, 22}, {1920, 21}};
  for (const auto& r : dcrit) by_width[r[0]] = r[1];
  std::vector<std::pair<double, double>> out;
  for (auto [w, d] : by_width) out.emplace_back(w, d);
  return out;
}

}  // namespace shapelaw::audit
