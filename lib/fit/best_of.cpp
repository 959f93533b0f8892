#include "fit/best_of.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "fit/report.h"
#include "util/error.h"

namespace shapelaw::fit {

using nlohmann::json;

namespace {

const json* at_path(const json& obj, const std::string& key) {
  if (obj.contains(key)) return &obj[key];  // a key with literal dots
  const json* node = &obj;
  std::stringstream path(key);
  std::string part;
  while (std::getline(path, part, '.')) {
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
  }
  return node;
}

void erase_path(json& obj, const std::string& key) {
  if (obj.contains(key)) { obj.erase(key); return; }
  auto dot = key.find('.');
  if (dot == std::string::npos) return;
  const std::string head = key.substr(0, dot);
  if (obj.contains(head) && obj[head].is_object()) erase_path(obj[head], key.substr(dot + 1));
}

json configuration_of(const Row& r, const std::string& key) {
  json c = r.binding;
  erase_path(c, key);
  c.erase("seed");
  if (key == "lr") {
    const json* ratio = at_path(r.binding, "min_lr_ratio");
    if (ratio && ratio->is_number() && ratio->get<double>() > 0) c.erase("min_lr");
  }
  return c;
}

std::string shape_text(const Row& r) {
  std::string s;
  if (r.depth > 0) s += "D=" + format_double(r.depth) + " ";
  if (r.width > 0) s += "W=" + format_double(r.width) + " ";
  if (r.params > 0 && !(r.depth > 0)) s += "params=" + format_double(r.params) + " ";
  if (r.params_nonemb > 0 && !(r.depth > 0) && !(r.params > 0)) s += "params_nonembedding=" + format_double(r.params_nonemb) + " ";
  if (r.tokens > 0) s += "T=" + format_double(r.tokens) + " ";
  return s.empty() ? "(no shape)" : s.substr(0, s.size() - 1);
}

json shape_json(const Row& r) {
  json s = json::object();
  if (r.depth > 0) s["depth"] = r.depth;
  if (r.width > 0) s["width"] = r.width;
  if (r.tokens > 0) s["tokens"] = r.tokens;
  if (r.params > 0) s["params"] = r.params;
  return s;
}

std::string list_values(const std::vector<double>& v) {
  std::string s;
  for (double x : v) s += (s.empty() ? "" : ", ") + format_double(x);
  return "[" + s + "]";
}

}  // namespace

std::vector<std::string> differing_keys(const json& a, const json& b) {
  std::vector<std::string> out;
  std::set<std::string> keys;
  if (a.is_object())
    for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
  if (b.is_object())
    for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  for (const auto& k : keys) {
    const bool in_a = a.is_object() && a.contains(k), in_b = b.is_object() && b.contains(k);
    if (in_a && in_b && a[k].is_object() && b[k].is_object()) {
      for (const auto& sub : differing_keys(a[k], b[k])) out.push_back(k + "." + sub);
    } else if (in_a != in_b || a[k] != b[k]) {
      out.push_back(k);
    }
  }
  return out;
}

BestChoice choose_best(const std::vector<double>& ascending_values, const std::vector<double>& means) {
  BestChoice c;
  if (means.empty() || means.size() != ascending_values.size())
    throw std::invalid_argument("choose_best: one mean per value, at least one");
  for (size_t i = 1; i < means.size(); ++i)
    if (means[i] < means[c.index]) c.index = i;  // strict: a tie keeps the smaller value
  c.single = means.size() == 1;
  if (!c.single && c.index == 0) c.edge = "smallest";
  if (!c.single && c.index == means.size() - 1) c.edge = "largest";
  return c;
}

BestOfResult select_best_of(const std::vector<Row>& rows, const std::string& key) {
  if (key.empty()) throw Error("--best-of: give the option the sweep varies, e.g. --best-of lr");
  struct Candidate {
    double value;
    std::vector<const Row*> rows;
  };
  // configuration (canonical dump) -> candidates by value
  std::map<std::string, std::map<double, Candidate>> configs;
  for (const auto& r : rows) {
    const json* v = at_path(r.binding, key);
    if (!v || !v->is_number())
      throw Error(located(r.source, r.line,
                          "--best-of " + key + ": the run's configuration has " +
                              (v ? "a non-number " + v->dump() + " for '" + key + "'" : "no '" + key + "'") +
                              (r.binding_from_summary || !r.binding.empty()
                                   ? std::string()
                                   : " (this summary.json has no config or binding_config)")));
    const double value = v->get<double>();
    auto& cand = configs[configuration_of(r, key).dump()][value];
    cand.value = value;
    cand.rows.push_back(&r);
  }
  BestOfResult out;
  json list = json::array();
  int edges = 0, singles = 0;
  for (const auto& [config, cands] : configs) {
    json cj = json::array();
    std::vector<double> values, means;
    std::vector<const Candidate*> order;
    for (const auto& [value, c] : cands) {  // ascending value
      double sum = 0;
      json ids = json::array();
      for (const Row* r : c.rows) {
        sum += r->loss;
        ids.push_back(r->run);
      }
      const double mean = sum / double(c.rows.size());
      cj.push_back({{"value", value}, {"mean_val_loss", mean}, {"n_runs", c.rows.size()}, {"run_ids", ids}});
      values.push_back(value);
      means.push_back(mean);
      order.push_back(&c);
    }
    const BestChoice choice = choose_best(values, means);
    const Candidate* best = order[choice.index];
    const Row& first = *best->rows.front();
    const std::string& edge = choice.edge;
    json entry = {{"shape", shape_json(first)}, {"configuration", json::parse(config)}, {"candidates", cj},
                  {"chosen", best->value}, {"edge", edge.empty() ? json(nullptr) : json(edge)},
                  {"single_candidate", cands.size() == 1}};
    list.push_back(entry);
    const std::string where = "--best-of " + key + ": " + shape_text(first) + " (runs " + json(cj[0]["run_ids"]).dump() +
                              (cands.size() > 1 ? " ..." : "") + ")";
    if (cands.size() == 1) {
      ++singles;
      out.warnings.push_back(where + ": one value only (" + format_double(best->value) + "): not a sweep");
    } else if (!edge.empty()) {
      ++edges;
      out.warnings.push_back(where + ": the best " + key + " " + format_double(best->value) + " is the " + edge +
                             " of its sweep " + list_values(values) + ": at the edge: widen the sweep");
    }
    for (const Row* r : best->rows) out.rows.push_back(*r);
  }
  canonical_order(out.rows);
  out.record = {{"key", key}, {"rows_in", rows.size()}, {"rows_kept", out.rows.size()},
                {"configurations", list}, {"at_edge", edges}, {"single_candidate", singles}};
  return out;
}

std::vector<std::string> check_replicates(const std::vector<Row>& rows) {
  // clusters: one replicate group, or equal shape and budget
  std::map<std::string, std::vector<const Row*>> clusters;
  for (const auto& r : rows) {
    if (!r.group.empty()) clusters["group " + r.group].push_back(&r);
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.17g %.17g %.17g %.17g %.17g", r.depth, r.width, r.params, r.params_nonemb,
                  r.tokens);
    clusters[std::string("shape ") + buf].push_back(&r);
  }
  std::vector<std::string> out;
  std::set<std::string> said;
  for (const auto& [name, members] : clusters) {
    if (members.size() < 2) continue;
    std::set<std::string> keys;
    for (size_t i = 0; i < members.size(); ++i)
      for (size_t k = i + 1; k < members.size(); ++k) {
        const Row& a = *members[i];
        const Row& b = *members[k];
        std::vector<std::string> diff;
        if (a.binding_from_summary && b.binding_from_summary) {
          diff = differing_keys(a.binding, b.binding);
        } else if (a.binding.contains("lr") && b.binding.contains("lr") && a.binding["lr"] != b.binding["lr"]) {
          diff = {"lr"};
        }
        for (const auto& key : diff)
          if (key != "seed") keys.insert(key);
        const bool grouped = !a.group.empty() && a.group == b.group;  // replicates by design
        const bool same = a.binding_from_summary == b.binding_from_summary && a.binding == b.binding &&
                          (a.binding_from_summary || !grouped);
        if (same && name.rfind("shape ", 0) == 0 && out.size() < 1000) {
          const std::string msg =
              shape_text(a) + ": runs " + a.run + " and " + b.run +
              (a.binding_from_summary ? " have the same binding configuration, seed included: the same run twice?"
                                      : " are the same configuration (every column but run and loss equal); both are kept");
          if (said.insert(msg).second) out.push_back(msg);
        }
      }
    if (keys.empty()) continue;
    std::string runs, klist;
    for (const Row* r : members) runs += (runs.empty() ? "" : ", ") + r->run;
    for (const auto& k : keys) klist += (klist.empty() ? "" : ", ") + k;
    const std::string msg = shape_text(*members[0]) + " (" + (name.rfind("group ", 0) == 0 ? name + ": " : "") +
                            "runs " + runs + ") differ in " + klist + ": they are not replicates" +
                            (keys.count("lr") ? "; to fit the best of each sweep use --best-of lr" : "");
    if (said.insert(msg).second) out.push_back(msg);
  }
  return out;
}

}  // namespace shapelaw::fit
