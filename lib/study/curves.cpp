#include "study/curves.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "fit/laws.h"
#include "fit/report.h"

namespace shapelaw::study {

namespace {
double n_of(const Run& r, const std::string& source) {
  if (source == "total") return r.params_total;
  if (source == "12dw2") return r.params_12dw2;
  return r.params_non_embedding;
}
}  // namespace

std::vector<CurvePoint> law_curves(const nlohmann::json& fit, const std::vector<std::string>& models,
                                   const std::vector<Run>& runs, int steps) {
  std::vector<CurvePoint> out;
  if (runs.empty() || !fit.contains("models")) return out;
  fit::ModelOptions mo;
  mo.phi_relative = fit.contains("options") && fit["options"].value("phi", std::string()) == "relative";
  mo.T_varies = !fit.contains("input") || fit["input"].value("tokens_vary", true);
  const std::string n_source =
      fit.contains("options") ? fit["options"].value("n_resolved", std::string("nonembedding")) : "nonembedding";
  int max_depth = 0;
  std::map<int, std::vector<const Run*>> by_width;
  for (const Run& r : runs) {
    by_width[r.width].push_back(&r);
    max_depth = std::max(max_depth, r.depth);
  }
  for (const std::string& name : models) {
    const nlohmann::json* rec = nullptr;
    for (const auto& m : fit["models"])
      if (m.value("name", std::string()) == name) rec = &m;
    if (!rec || !rec->contains("params")) continue;
    fit::Model law;
    try {
      // a record with A is in the paper's coordinates (held A or constant, or written before
      // the Box-Cox ones, fit/laws.h); one with s in Box-Cox's
      fit::ModelOptions law_options = mo;
      law_options.box_cox = !(*rec)["params"].contains("A");
      law = fit::make_model(name, law_options);
    } catch (const std::exception&) {
      continue;  // a law this build does not know draws no curve
    }
    const auto names = law.param_names();
    Eigen::VectorXd p(names.size());
    bool complete = true;
    for (size_t q = 0; q < names.size(); ++q) {
      const auto& params = (*rec)["params"];
      if (!params.contains(names[q]) || !params[names[q]]["estimate"].is_number()) complete = false;
      else p[q] = params[names[q]]["estimate"].get<double>();
    }
    if (!complete) continue;
    for (const auto& [w, rs] : by_width) {
      // N(D) = a + b·D by least squares over the width's runs. T likewise where the runs saw
      // different numbers of tokens: a budget per configuration (train --tokens-per-param)
      // makes T proportional to a parameter count, so linear in D too, and a curve drawn at
      // one T would rise with depth where the runs, each with its own budget, fall. Where
      // every run saw the same tokens, T is that number exactly.
      const auto line = [&](auto value) {
        double sd = 0, sv = 0, sdd = 0, sdv = 0;
        for (const Run* r : rs) {
          const double y = value(*r);
          sd += r->depth;
          sv += y;
          sdd += double(r->depth) * r->depth;
          sdv += r->depth * y;
        }
        const double n = double(rs.size()), den = n * sdd - sd * sd;
        const double b = den > 0 ? (n * sdv - sd * sv) / den : sv / sd, a = den > 0 ? (sv - b * sd) / n : 0;
        return std::pair{a, b};
      };
      const auto [a, b] = line([&](const Run& r) { return n_of(r, n_source); });
      const bool same_tokens =
          std::all_of(rs.begin(), rs.end(), [&](const Run* r) { return r->tokens == rs.front()->tokens; });
      const auto [ta, tb] = same_tokens ? std::pair{double(rs.front()->tokens), 0.0}
                                        : line([](const Run& r) { return double(r.tokens); });
      const double d_max = 1.5 * max_depth;
      for (int i = 0; i <= steps; ++i) {
        // log-spaced in D, as the plots' axes are
        const double d = std::exp(std::log(d_max) * double(i) / steps);
        fit::Point x;
        x.D = d;
        x.W = w;
        x.N = a + b * d;
        x.T = same_tokens ? ta : ta + tb * d;
        out.push_back({name, w, d, x.N, x.T, law.predict(x, p)});
      }
    }
  }
  return out;
}

std::string curves_csv(const std::vector<CurvePoint>& points) {
  std::ostringstream o;
  o << "model,width,depth,N,T,loss\n";
  for (const auto& c : points)
    o << c.model << ',' << c.width << ',' << fit::format_double(c.depth) << ',' << fit::format_double(c.N) << ','
      << fit::format_double(c.T) << ',' << fit::format_double(c.loss) << '\n';
  return o.str();
}

}  // namespace shapelaw::study
