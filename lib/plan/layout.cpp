#include "plan/layout.h"

#include <cstdio>
#include <sstream>
#include <tuple>
#include <vector>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

Plan choose_layout(const PlanOptions& base, int max_gpus) {
  const int64_t sequences = base.batch_tokens / base.model.seq_len;
  Plan best, fallback;
  bool found = false, any = false;
  for (int gpus = 1; gpus <= std::max(1, max_gpus); gpus *= 2) {
    if (sequences % gpus != 0) continue;
    for (int zero : gpus > 1 ? std::vector<int>{1, 2} : std::vector<int>{0})
    for (bool recompute : {false, true}) {
      PlanOptions o = base;
      o.world = gpus;
      o.zero = zero;
      o.activation_checkpointing = recompute;
      o.micro_batch = 1;  // always divides: find the largest that fits first
      Plan p = make_plan(o);
      fallback = p;
      any = true;
      if (p.max_micro_batch == 0) continue;
      int64_t micro = std::min<int64_t>(p.max_micro_batch, base.micro_batch);
      while (p.sequences_per_rank % micro != 0) --micro;
      o.micro_batch = micro;
      p = make_plan(o);
      // ZeRO-2 sends the gradients once per micro-batch instead of once per step: the
      // plan does not price communication, so it is chosen only where ZeRO-1 needs more
      // GPUs or recomputation
      if (!found || std::make_tuple(p.gpu_hours, gpus, zero) <
                        std::make_tuple(best.gpu_hours, best.options.world, best.options.zero))
        best = p;
      found = true;
    }
  }
  if (found) return best;
  if (!any) return make_plan(base);  // no GPU count divides the batch: make_plan says why
  return fallback;
}

std::string layout_flags(const Plan& p) {
  std::string s = "--micro-batch " + std::to_string(p.options.micro_batch);
  if (p.options.zero > 0) s += " --zero " + std::to_string(p.options.zero);
  if (p.options.activation_checkpointing) s += " --activation-checkpointing";
  return s;
}

std::string format_grid(const std::vector<GridRow>& rows) {
  std::string s;
  char buf[512];
  const char* head = "%-18s %4s %5s %9s %9s %4s %5s %9s %4s %6s %10s %10s %9s %4s %10s\n";
  std::snprintf(buf, sizeof buf, head, "run", "D", "W", "params", "tokens", "GPUs", "micro", "recompute", "ZeRO",
                "probes", "peak/GPU", "needs/GPU", "margin", "fits", "GPU-hours");
  s += buf;
  double params = 0, tokens = 0, flops = 0, gpu_hours = 0, peak = 0, required = 0, margin = 1e300;
  int fitting = 0;
  const GridRow* most_host = nullptr;  // the run whose ranks together hold the most host memory
  auto host_of = [](const GridRow& g) { return double(g.plan.host) * g.plan.options.world; };
  for (auto& r : rows) {
    const Plan& p = r.plan;
    const PlanOptions& o = p.options;
    std::snprintf(buf, sizeof buf, "%-18s %4d %5d %9s %9s %4d %5lld %9s %4d %6lld %10s %10s %9s %4s %10s\n", r.run.c_str(),
                  o.model.depth, o.model.width, fmt("%.3g", double(p.params.total)).c_str(),
                  fmt("%.3g", double(p.tokens)).c_str(), o.world, (long long)o.micro_batch,
                  o.activation_checkpointing ? "yes" : "no", o.zero, (long long)o.probe_steps,
                  format_bytes(double(p.peak)).c_str(),
                  format_bytes(double(p.required)).c_str(), format_signed_bytes(double(p.margin)).c_str(), p.fits ? "yes" : "NO",
                  fmt(p.gpu_hours < 10 ? "%.1f" : "%.0f", p.gpu_hours).c_str());
    s += buf;
    params += double(p.params.total);
    tokens += double(p.tokens);
    flops += p.flops_per_run;
    gpu_hours += p.gpu_hours;
    peak = std::max(peak, double(p.peak));
    required = std::max(required, double(p.required));
    margin = std::min(margin, double(p.margin));
    fitting += p.fits;
    if (!most_host || host_of(r) > host_of(*most_host)) most_host = &r;
  }
  std::snprintf(buf, sizeof buf, "%-18s %4s %5s %9s %9s %4s %5s %9s %4s %6s %10s %10s %9s %4s %10s\n", "total", "", "",
                fmt("%.3g", params).c_str(), fmt("%.3g", tokens).c_str(), "", "", "", "", "",
                ("max " + format_bytes(peak)).c_str(), format_bytes(required).c_str(),
                ("min " + format_signed_bytes(margin)).c_str(), (std::to_string(fitting) + "/" + std::to_string(rows.size())).c_str(),
                fmt("%.0f", gpu_hours).c_str());
  s += buf;
  if (!rows.empty()) {
    const PlanOptions& o = rows.front().plan.options;
    s += std::to_string(rows.size()) + " runs, " + fmt("%.3g", flops) + " FLOPs executed, " + fmt("%.0f", gpu_hours) +
         " GPU-hours at " + fmt("%.0f%%", 100 * o.mfu) + " of " + fmt("%.4g", o.peak_flops) + " FLOP/s per GPU, " +
         format_bytes(o.gpu_memory) + " per GPU\n";
    if (o.cuda) {
      PlanOptions one = o, several = o;
      one.world = 1;
      several.world = 2;
      s += "needs/GPU = peak (bytes allocated to tensors) + " + fmt("%.0f%%", 100 * o.reserve_fraction) +
           " allocator reserve + the CUDA runtime (context and cuBLAS: " + format_bytes(double(runtime_overhead_bytes(one))) +
           ", with NCCL's buffers " + format_bytes(double(runtime_overhead_bytes(several))) +
           "); a run fits when its margin is >= 0\n";
    s += "probes = --probe-steps per run: a probe step is planned as any other (it runs as one: under ZeRO the "
         "per-layer norms come from the ranks' gradient slices, no gradient is kept whole)\n";
    const Plan& h = most_host->plan;
    s += "host memory: each rank builds its fp32 model on the CPU before it moves to its GPU: " +
         format_bytes(double(h.host)) + " per rank, " + format_bytes(double(h.host) * h.options.world) + " for " +
         most_host->run + "'s " + std::to_string(h.options.world) +
         " rank(s), the most of any run; runs started side by side add theirs (a scheduler's memory limit, "
         "e.g. Slurm's --mem-per-gpu, must allow it)\n";
    }
  }
  return s;
}

nlohmann::json grid_json(const std::vector<GridRow>& rows) {
  nlohmann::json runs = nlohmann::json::array();
  double gpu_hours = 0, flops = 0;
  bool fits = true;
  for (auto& r : rows) {
    nlohmann::json j = to_json(r.plan);
    j["run"] = r.run;
    j["train_flags"] = layout_flags(r.plan);
    runs.push_back(j);
    gpu_hours += r.plan.gpu_hours;
    flops += r.plan.flops_per_run;
    fits = fits && r.plan.fits;
  }
  return {{"format", "shapelaw.plan-grid"}, {"version", 1}, {"runs", runs},
          {"totals", {{"runs", rows.size()}, {"flops", flops}, {"gpu_hours", gpu_hours}}}, {"fits", fits}};
}

}  // namespace shapelaw

namespace shapelaw {

std::vector<GridLine> read_grid(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<GridLine> rows;
  std::string text;
  int number = 0;
  while (std::getline(in, text)) {
    ++number;
    std::istringstream words(text);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty() || w[0][0] == '#') continue;
    auto positive = [](const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos && s != "0"; };
    if (w.size() < 3 || !positive(w[1]) || !positive(w[2]))
      throw Error(located(path, number, "expected 'run depth width [train flags]', got '" + text + "'"));
    GridLine row{w[0], {"--depth", w[1], "--width", w[2]}, number};
    row.train_args.insert(row.train_args.end(), w.begin() + 3, w.end());
    rows.push_back(row);
  }
  if (rows.empty()) throw Error(path + ": no runs in the grid");
  return rows;
}

}  // namespace shapelaw
