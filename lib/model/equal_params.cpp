#include "model/equal_params.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace shapelaw {

int64_t parameter_count(const ParamCounts& p, const std::string& count) {
  if (count == "non-embedding") return p.non_embedding;
  if (count == "12DW2") return p.paper_12DW2;
  if (count == "total") return p.total;
  throw Error("--count must be non-embedding, 12DW2 or total (got '" + count + "')");
}

std::vector<EqualParamShape> equal_param_shapes(const ModelConfig& base, int64_t target,
                                                const std::vector<int>& depths, const std::string& count) {
  if (target <= 0) throw Error("--params must be positive");
  if (depths.empty()) throw Error("--depths: give at least one depth");
  std::vector<EqualParamShape> out;
  for (int depth : depths) {
    if (depth < 1) throw Error("--depths: depth must be >= 1 (got " + std::to_string(depth) + ")");
    ModelConfig c = base;
    c.depth = depth;
    // counts grow monotonically in width: walk multiples of head_dim until past the target
    EqualParamShape best;
    double best_gap = INFINITY;
    for (int width = base.head_dim;; width += base.head_dim) {
      c.width = width;
      ParamCounts p = count_parameters(c);
      const double n = double(parameter_count(p, count));
      const double gap = std::abs(std::log(n / double(target)));
      if (gap < best_gap) best = {depth, width, p, n / double(target) - 1.0}, best_gap = gap;
      if (n > double(target)) break;
      if (width > (1 << 20)) throw Error("--params " + std::to_string(target) + " needs a width over 2^20");
    }
    out.push_back(best);
  }
  return out;
}

std::string render_equal_param_shapes(const std::vector<EqualParamShape>& shapes, int64_t target,
                                      const std::string& count, const std::string& format, const std::string& prefix,
                                      const std::string& extra_flags) {
  auto name = [&](const EqualParamShape& s) {
    return prefix + "-d" + std::to_string(s.depth) + "-w" + std::to_string(s.width);
  };
  auto pct = [](double d) {
    char b[32];
    std::snprintf(b, sizeof b, "%+.1f%%", 100 * d);
    return std::string(b);
  };
  std::ostringstream os;
  if (format == "json") {
    nlohmann::json rows = nlohmann::json::array();
    for (auto& s : shapes)
      rows.push_back({{"run", name(s)}, {"depth", s.depth}, {"width", s.width},
                      {"non_embedding", s.params.non_embedding}, {"paper_12DW2", s.params.paper_12DW2},
                      {"total", s.params.total}, {"deviation", s.deviation}});
    os << nlohmann::json{{"target", target}, {"count", count}, {"shapes", rows}}.dump(2) << "\n";
  } else if (format == "table") {
    os << "run\tdepth\twidth\tnon_embedding\t12DW2\ttotal\tdeviation\n";
    for (auto& s : shapes)
      os << name(s) << "\t" << s.depth << "\t" << s.width << "\t" << s.params.non_embedding << "\t"
         << s.params.paper_12DW2 << "\t" << s.params.total << "\t" << pct(s.deviation) << "\n";
  } else if (format == "grid") {
    os << "# equal parameters: " << count << " N ~ " << target << " (train shapes); run depth width [flags]\n";
    for (auto& s : shapes)
      os << "# " << count << " " << parameter_count(s.params, count) << " (" << pct(s.deviation)
         << "), non-embedding " << s.params.non_embedding << ", 12DW2 " << s.params.paper_12DW2 << ", total "
         << s.params.total << "\n"
         << name(s) << " " << s.depth << " " << s.width << (extra_flags.empty() ? "" : " " + extra_flags) << "\n";
  } else {
    throw Error("--format must be grid, table or json (got '" + format + "')");
  }
  return os.str();
}

}  // namespace shapelaw
