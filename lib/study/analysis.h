#pragma once
// A study's analysis, what both reports print: the default study (one parameterization, maybe
// seeds and an lr sweep) and the controls (SP at a fixed lr, SP at its best lr, CompleteP at its
// best base lr). Shell only lays out study.json (docs/formats.md "study.json").
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "study/excess.h"
#include "study/law_evidence.h"
#include "study/replicates.h"
#include "study/runs.h"

namespace shapelaw::study {

// Tokens per parameter of the largest model, in Chinchilla's count (total parameters, embeddings
// included: Hoffmann et al. count them; ≈ 20 is compute-optimal there).
double tokens_per_param(const std::vector<Run>& runs);

// One arm of the controls, or the default study itself.
struct Arm {
  std::string name, title;  // "sp-fixed", "SP, lr 3e-3"
  std::vector<Cell> selected;   // one cell per (width, depth)
  std::vector<BestLr> best;     // tuned arms: per row, its best lr
  std::vector<WidthExcess> excess;
  std::vector<PenaltyVerdict> verdicts;  // per excess row
  std::optional<LawEvidence> law;
};

struct StudyAnalysis {
  std::vector<Run> runs;  // every run the fit read
  std::vector<Cell> cells;  // every (row, lr)
  SeedSpread spread;
  Arm arm;  // the runs the fit kept (fit-law --best-of) as cells, their excess and the law
  double tokens_per_param = 0;
  std::vector<int> widths;
  int min_depth = 0, max_depth = 0;
  std::vector<std::string> caveats;
  std::string headline;  // markdown: the report's opening and, plain, the terminal's closing block
};

struct ControlsAnalysis {
  std::vector<Run> runs;
  SeedSpread spread;
  std::vector<Arm> arms;  // sp-fixed, sp-tuned, completep
  double fixed_lr = 0;
  double tokens_per_param = 0;
  // Rows off the depth sweeps at (about) one parameter count: 12·D·W² within 15% of the most
  // common count of such rows; empty when fewer than two rows share one.
  double equal_params_n = 0;
  std::vector<std::pair<std::string, Cell>> equal_params;  // (arm, cell)
};

// summaries empty: the files the fit read (fit.json input.files). controls: a controls
// study.json for the headline (null: the headline says how to run them).
StudyAnalysis analyze_study(const nlohmann::json& fit, const std::string& fit_path,
                            std::vector<std::string> summaries, const nlohmann::json& controls);
nlohmann::json study_json(const StudyAnalysis& a);

// sp: SP's runs at every lr (the fixed-lr ones included), completep: CompleteP's. fits: per arm
// name its fit-law record (missing: no law verdict for that arm). spread: the seed SD to judge by
// when the controls have no replicates of their own (e.g. the default study's); empty: none.
ControlsAnalysis analyze_controls(const std::vector<std::string>& sp, const std::vector<std::string>& completep,
                                  double fixed_lr, const std::map<std::string, nlohmann::json>& fits,
                                  const std::optional<SeedSpread>& spread);
nlohmann::json controls_json(const ControlsAnalysis& a);

// The headline's sentences, each one rule (tested in tests/study):
std::string penalty_sentence(const std::vector<WidthExcess>& excess, const std::vector<PenaltyVerdict>& verdicts,
                             const SeedSpread& spread);
std::string law_sentence(const LawEvidence& law);
// controls: a controls study.json, or null.
std::string controls_sentence(const nlohmann::json& controls);

}  // namespace shapelaw::study
