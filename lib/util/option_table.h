#pragma once
// One row per option of a configuration struct: its JSON key, its command-line flag and
// help, and whether it fixes the math of a run (a checkpoint whose binding options differ
// is refused). The CLI, the JSON form and the resume check are all derived from these
// rows (visit_*_options), and so are `train --options-json` and the sweepable flags of the
// study grids. Torch-free.
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace shapelaw {

// A row: OptionInfo{"lr", "--lr", "peak (base) learning rate"}.sweepable(); a row fixes the
// math of a run and shows its default unless it says otherwise.
struct OptionInfo {
  const char* key;    // JSON key (summary.json "config", checkpoints' state.json)
  const char* flag;   // CLI flag(s) as CLI11 takes them ("--lr", "--bias,!--no-bias"); "" = JSON only
  const char* help;   // "" = hidden from --help
  bool binding = true;       // fixes the math of the run (checked on resume; in binding_config)
  bool show_default = true;  // --help shows the default value
  bool sweep = false;        // a study grid may give it a comma list (scripts/study-grid, `train --options-json`)
  // how a run executes or is stored, not what it computes
  constexpr OptionInfo runtime() const { OptionInfo o = *this; o.binding = false; return o; }
  constexpr OptionInfo no_default() const { OptionInfo o = *this; o.show_default = false; return o; }
  constexpr OptionInfo sweepable() const { OptionInfo o = *this; o.sweep = true; return o; }
};

// JSON of every row; `filter(info)` selects rows.
template <class Config, class Visit, class Filter>
nlohmann::json options_to_json(Config& c, Visit visit, Filter filter) {
  nlohmann::json j = nlohmann::json::object();
  visit(c, [&](const OptionInfo& o, auto& member) {
    if (filter(o)) j[o.key] = member;
  });
  return j;
}

// Sets every row present in j; unknown keys (other than `tolerated`) are refused with
// `what` naming the configuration.
template <class Config, class Visit>
void options_from_json(Config& c, Visit visit, const nlohmann::json& j, const std::string& what,
                       const std::vector<std::string>& tolerated = {}) {
  if (!j.is_object()) throw Error(what + ": expected a JSON object");
  std::vector<std::string> known = tolerated;
  visit(c, [&](const OptionInfo& o, auto&) { known.push_back(o.key); });
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (auto& k : known) ok = ok || it.key() == k;
    if (!ok) throw Error(what + ": unknown key '" + it.key() + "'");
  }
  visit(c, [&](const OptionInfo& o, auto& member) {
    if (!j.contains(o.key)) return;
    try {
      member = j.at(o.key).template get<std::remove_reference_t<decltype(member)>>();
    } catch (const nlohmann::json::exception& e) {
      throw Error(what + ": key '" + std::string(o.key) + "': " + e.what());
    }
  });
}

}  // namespace shapelaw
