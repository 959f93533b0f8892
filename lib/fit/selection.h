#pragma once
// Model comparison and selection over the fitted laws: the criterion table with Akaike
// weights, likelihood-ratio tests of Φ, and the selected law. A law whose parameters are
// not identified or whose fit did not converge still takes part, but never silently: the
// selection then names the caveat and the best law without one (selected_identified_model),
// and every such caveat is returned for the tools to print in every output format. Ties
// are broken by fewer free parameters, then the catalog order, never by rounding.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fitter.h"
#include "fit/identification.h"

namespace shapelaw::fit {

struct FittedLaw {
  Model model;
  FitResult fit;
  Identification identification;
};

struct Selection {
  nlohmann::json comparison;
  std::string selected, selected_phi, selected_identified;
  std::vector<std::string> warnings;
};

// models: the fit.json "models" array (metrics read from it), in catalog order; n: rows.
Selection select_law(const nlohmann::json& models, const std::map<std::string, FittedLaw>& fitted, size_t n,
                     const std::string& criterion);

}  // namespace shapelaw::fit
