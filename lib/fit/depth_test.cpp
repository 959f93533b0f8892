#include "fit/depth_test.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "util/error.h"
#include "util/text.h"

namespace shapelaw::fit {

using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kSameTokens = 1e-3;  // relative: two checkpoints at the "same" logged count

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string fmt(double v, int digits = 4) { return significant(v, digits); }

// One run's checkpoints, tokens ascending.
struct RunCurve {
  std::string run;
  double depth = 0;
  std::vector<double> T, L;
  // loss at t, linear in ln T between the checkpoints around it (t inside the run's range)
  double at(double t) const {
    if (T.size() == 1) return L[0];
    auto hi = std::lower_bound(T.begin(), T.end(), t);
    if (hi == T.end()) return L.back();
    const size_t j = hi - T.begin();
    if (j == 0 || *hi == t) return L[j];
    const double f = (std::log(t) - std::log(T[j - 1])) / (std::log(T[j]) - std::log(T[j - 1]));
    return L[j - 1] + f * (L[j] - L[j - 1]);
  }
  // the loss logged within kSameTokens of t, or NaN
  double logged_at(double t) const {
    for (size_t j = 0; j < T.size(); ++j)
      if (std::abs(T[j] - t) <= kSameTokens * t) return L[j];
    return kNaN;
  }
};

bool same_tokens(double a, double b) { return std::abs(a - b) <= kSameTokens * std::max(a, b); }

// The runs of one width, each with its checkpoints (rows without tokens: one checkpoint at T = 0).
std::vector<RunCurve> runs_of(const std::vector<const Row*>& rows) {
  std::map<std::string, RunCurve> by_run;
  for (const Row* r : rows) {
    RunCurve& c = by_run[r->run.empty() ? r->source + ":" + std::to_string(r->line) : r->run];
    c.run = r->run.empty() ? r->source + ":" + std::to_string(r->line) : r->run;
    c.depth = r->depth;
    c.T.push_back(r->T > 0 ? r->T : 0);
    c.L.push_back(r->loss);
  }
  std::vector<RunCurve> out;
  for (auto& [name, c] : by_run) {
    std::vector<size_t> order(c.T.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return c.T[a] < c.T[b]; });
    RunCurve s;
    s.run = c.run;
    s.depth = c.depth;
    for (size_t i : order) {
      s.T.push_back(c.T[i]);
      s.L.push_back(c.L[i]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// Matched token counts and each run's losses there; fills t.matching and t.tokens.
std::vector<std::vector<double>> match_tokens(const std::vector<RunCurve>& runs, WidthDepthTest& t) {
  const bool one_each = std::all_of(runs.begin(), runs.end(), [](const RunCurve& c) { return c.T.size() == 1; });
  double lo = 0, hi = std::numeric_limits<double>::infinity();
  for (const auto& c : runs) {
    lo = std::max(lo, c.T.front());
    hi = std::min(hi, c.T.back());
  }
  const bool all_same_single =
      one_each && std::all_of(runs.begin(), runs.end(), [&](const RunCurve& c) { return same_tokens(c.T[0], runs[0].T[0]); });
  std::vector<std::vector<double>> losses(runs.size());
  if (all_same_single) {
    t.matching = "logged";
    t.tokens = {runs[0].T[0]};
    for (size_t i = 0; i < runs.size(); ++i) losses[i] = {runs[i].L[0]};
    return losses;
  }
  if (one_each || !(lo <= hi * (1 + kSameTokens))) {
    // no token count every run reached: each run's final loss, at its own budget
    t.matching = "final";
    for (size_t i = 0; i < runs.size(); ++i) losses[i] = {runs[i].L.back()};
    return losses;
  }
  // the reference grid: the checkpoints inside [lo, hi] of the run with the fewest of them
  const RunCurve* ref = nullptr;
  size_t fewest = std::numeric_limits<size_t>::max();
  for (const auto& c : runs) {
    size_t inside = 0;
    for (double x : c.T)
      if (x >= lo * (1 - kSameTokens) && x <= hi * (1 + kSameTokens)) ++inside;
    if (inside > 0 && inside < fewest) { fewest = inside; ref = &c; }  // runs are in name order: ties are stable
  }
  for (double x : ref->T)
    if (x >= lo * (1 - kSameTokens) && x <= hi * (1 + kSameTokens)) t.tokens.push_back(x);
  bool logged = true;
  for (const auto& c : runs)
    for (double x : t.tokens)
      if (!std::isfinite(c.logged_at(x))) logged = false;
  t.matching = logged ? "logged" : "interpolated";
  for (size_t i = 0; i < runs.size(); ++i)
    for (double x : t.tokens)
      losses[i].push_back(logged ? runs[i].logged_at(x) : runs[i].at(std::min(std::max(x, lo), hi)));
  return losses;
}

}  // namespace

double paper_dcrit(double width) { return 2.43 * std::log(width); }

DepthTest depth_test(const std::vector<Row>& rows, const DepthTestOptions& o) {
  DepthTest out;
  std::map<double, std::vector<const Row*>> by_width;
  for (const auto& r : rows) by_width[r.width].push_back(&r);
  // the seeds' spread: runs of one shape at the largest matched count, pooled over shapes
  double ss = 0;
  int df = 0;
  struct Pending {
    WidthDepthTest t;
    std::vector<std::vector<double>> run_losses;  // per depth: each run's loss at the largest matched count
  };
  std::vector<Pending> pending;
  for (const auto& [width, wrows] : by_width) {
    std::vector<RunCurve> runs = runs_of(wrows);
    std::map<double, std::vector<size_t>> by_depth;
    for (size_t i = 0; i < runs.size(); ++i) by_depth[runs[i].depth].push_back(i);
    if (by_depth.size() < 2) continue;
    Pending p;
    WidthDepthTest& t = p.t;
    t.width = width;
    t.paper_dcrit = paper_dcrit(width);
    const auto losses = match_tokens(runs, t);
    const size_t nT = t.matching == "final" ? 1 : t.tokens.size();
    std::vector<double> budgets;
    for (const auto& [depth, idx] : by_depth) {
      DepthCurve c;
      c.depth = depth;
      c.loss.assign(nT, 0);
      std::vector<double> last;
      double budget = 0;
      for (size_t i : idx) {
        c.runs.push_back(runs[i].run);
        for (size_t k = 0; k < nT; ++k) c.loss[k] += losses[i][k] / idx.size();
        last.push_back(losses[i][nT - 1]);
        budget += runs[i].T.back() / idx.size();
      }
      std::sort(c.runs.begin(), c.runs.end());
      if (idx.size() > 1) {
        double m = 0;
        for (double v : last) m += v / last.size();
        for (double v : last) ss += (v - m) * (v - m);
        df += (int)last.size() - 1;
      }
      budgets.push_back(budget);
      p.run_losses.push_back(last);
      t.curves.push_back(std::move(c));
    }
    if (t.matching == "final") t.tokens = budgets;
    pending.push_back(std::move(p));
  }
  if (pending.empty())
    throw Error("no width has two depths: the depth test compares depths at one width (widths: " +
                std::to_string(by_width.size()) + ", each with one depth)");
  if (df > 0) {
    out.seed_sd = std::sqrt(ss / df);
    out.seed_sd_df = df;
    out.noise_note = "noise: the pooled SD of runs of one shape (seeds) at the largest matched token count, " +
                     fmt(out.seed_sd, 3) + " nats (df " + std::to_string(df) + ")";
  } else {
    out.seed_sd = o.assumed_seed_sd;
    out.noise_note = "noise: the data has no seeds (one run per shape), so the seed-to-seed SD is assumed, " +
                     fmt(o.assumed_seed_sd, 3) + " nats (--seed-sd): a difference smaller than " + fmt(o.z, 2) +
                     " standard errors of it is within the noise";
  }
  for (auto& p : pending) {
    WidthDepthTest& t = p.t;
    const size_t nT = t.curves[0].loss.size();
    for (size_t k = 0; k < nT; ++k) {
      size_t best = 0;
      for (size_t d = 1; d < t.curves.size(); ++d)
        if (t.curves[d].loss[k] < t.curves[best].loss[k]) best = d;
      t.best_depth.push_back(t.curves[best].depth);
    }
    auto se_between = [&](size_t a, size_t b) {
      return out.seed_sd * std::sqrt(1.0 / p.run_losses[a].size() + 1.0 / p.run_losses[b].size());
    };
    for (size_t d = 0; d + 1 < t.curves.size(); ++d) {
      DepthStep s;
      s.from = t.curves[d].depth;
      s.to = t.curves[d + 1].depth;
      for (size_t k = 0; k < nT; ++k) s.delta.push_back(t.curves[d + 1].loss[k] - t.curves[d].loss[k]);
      s.final_delta = s.delta.back();
      s.se = se_between(d, d + 1);
      s.sign = s.final_delta > o.z * s.se ? 1 : s.final_delta < -o.z * s.se ? -1 : 0;
      s.past_dcrit = s.to > t.paper_dcrit;
      t.steps.push_back(s);
    }
    bool has_past = false, has_shallower = false;
    for (size_t d = 0; d < t.curves.size(); ++d) {
      if (t.curves[d].depth <= t.paper_dcrit) continue;
      if (d > 0) has_shallower = true;
      has_past = true;
      for (size_t e = 0; e < d; ++e) {
        const double diff = t.curves[d].loss[nT - 1] - t.curves[e].loss[nT - 1];
        if (diff > o.z * se_between(e, d)) t.worse_past_dcrit.push_back({t.curves[e].depth, t.curves[d].depth});
      }
    }
    // the deepest depth past D_crit that beats every shallower one everywhere
    for (size_t d = t.curves.size(); d-- > 1;) {
      if (t.curves[d].depth <= t.paper_dcrit) break;
      bool wins = true;
      for (size_t k = 0; k < nT && wins; ++k)
        for (size_t e = 0; e < d; ++e)
          if (!(t.curves[d].loss[k] < t.curves[e].loss[k])) wins = false;
      if (wins) { t.past_dcrit_winner = t.curves[d].depth; break; }
    }
    if (has_past && has_shallower) {
      ++out.widths_with_past_dcrit;
      if (!t.worse_past_dcrit.empty()) ++out.widths_with_penalty;
    }
    std::ostringstream s;
    const std::string at = t.matching == "final" ? "at each run's own budget (not matched)"
                                                 : "at " + std::to_string(nT) + " matched token count" +
                                                       (nT == 1 ? "" : "s") + " (" + t.matching + ")";
    s << "W = " << fmt(t.width) << " (paper's D_crit " << fmt(t.paper_dcrit, 3) << "): ";
    if (t.past_dcrit_winner > 0 || !t.worse_past_dcrit.empty()) {
      if (t.past_dcrit_winner > 0)
        s << "D = " << fmt(t.past_dcrit_winner) << ", past the paper's D_crit, has a lower loss than every shallower "
          << "depth " << at << (t.worse_past_dcrit.empty() ? "." : "; but ");
      if (!t.worse_past_dcrit.empty()) {
        const auto& [a, b] = t.worse_past_dcrit.front();
        s << "D = " << fmt(b) << " (past D_crit) is worse than D = " << fmt(a) << " beyond the noise"
          << (t.past_dcrit_winner > 0 ? "" : " " + at) << ": the paper's penalty, seen without a law.";
      }
    } else if (!has_past) {
      s << "no depth here is past the paper's D_crit; the best depth " << at << " is D = " << fmt(t.best_depth.back())
        << ".";
    } else if (!has_shallower) {
      s << "every depth here is past the paper's D_crit, so none is shallower than it; the best depth is D = "
        << fmt(t.best_depth.back()) << ".";
    } else {
      s << "no deeper run past D_crit is worse than a shallower one beyond the noise, but none beats every shallower "
           "one at every token count; the best depth at the largest count is D = "
        << fmt(t.best_depth.back()) << ".";
    }
    t.sentence = s.str();
    out.widths.push_back(std::move(t));
  }
  return out;
}

json depth_test_json(const DepthTest& t) {
  json widths = json::array();
  for (const auto& w : t.widths) {
    json curves = json::array();
    for (const auto& c : w.curves) {
      json losses = json::array();
      for (double v : c.loss) losses.push_back(num(v));
      curves.push_back({{"depth", c.depth}, {"runs", c.runs}, {"loss", losses}, {"past_dcrit", c.depth > w.paper_dcrit}});
    }
    json steps = json::array();
    for (const auto& s : w.steps) {
      json d = json::array();
      for (double v : s.delta) d.push_back(num(v));
      steps.push_back({{"from", s.from}, {"to", s.to}, {"delta", d}, {"final_delta", num(s.final_delta)},
                       {"se", num(s.se)}, {"sign", s.sign}, {"past_dcrit", s.past_dcrit}});
    }
    json worse = json::array();
    for (const auto& [a, b] : w.worse_past_dcrit) worse.push_back({{"shallow", a}, {"deep", b}});
    std::vector<double> depths;
    for (const auto& c : w.curves) depths.push_back(c.depth);
    widths.push_back({{"width", w.width},
                      {"paper_dcrit", w.paper_dcrit},
                      {"depths", depths},
                      {"matching", w.matching},
                      {"tokens", w.tokens},
                      {"curves", curves},
                      {"best_depth", w.best_depth},
                      {"steps", steps},
                      {"past_dcrit_winner", w.past_dcrit_winner > 0 ? json(w.past_dcrit_winner) : json(nullptr)},
                      {"worse_past_dcrit", worse},
                      {"sentence", w.sentence}});
  }
  return {{"widths", widths},
          {"noise", {{"seed_sd", t.seed_sd}, {"df", t.seed_sd_df}, {"assumed", t.seed_sd_df == 0}, {"note", t.noise_note}}},
          {"widths_with_past_dcrit", t.widths_with_past_dcrit},
          {"widths_with_penalty", t.widths_with_penalty}};
}

}  // namespace shapelaw::fit
