// probe-grads: per-layer gradient norms of train checkpoints, the exponential-decay fit
// (persistence length tau, gradient-side D_crit = 1 + tau) and the tau table fit-law reads.
// All logic lives in lib/probe/; this file parses flags and wires outputs.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "probe/measure.h"
#include "probe/profile.h"
#include "probe/summarize.h"
#include "probe/tau_fit.h"
#include "compat/torch_compat.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/cpu_runtime.h"
#include "util/error.h"
#include "util/output.h"
#include "util/command_line.h"
#include "util/tool_main.h"

using namespace shapelaw;
using namespace shapelaw::probe;
namespace fs = std::filesystem;

namespace {

const char* kFooter = R"(Typical use:
  probe-grads measure RUN --step 1000          # RUN/grad_probe/step_1000/grad_profile.{csv,json}
  probe-grads fit RUN/grad_probe/step_1000     # .../grad_fit.json
  probe-grads summarize runs/ -o tau.csv       # every grad_fit.json below runs/
  fit-law --tau tau.csv                        # tau = c*W^a against tau = c*ln W
The decay model (paper 3.2): ||grad_l|| = ||grad_last|| exp(-(D-1-l)/tau), layers l = 0..D-1;
gradient-side critical depth (appendix A.2): D_crit = 1 + tau. Formats: docs/formats.md.
Steps: a profile's step counts the updates applied to its weights (checkpoint step_N);
train's grad_norms.csv logs step s with the weights after s-1 updates, so checkpoint N
matches logged step N+1 (measure --replay-train-step reproduces it exactly).)";

std::string fmt(const char* f, double v) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_profile(const GradProfile& p) {
  std::printf("layer  block_norm     ratio      attn       mlp        norm\n");
  const int D = p.depth();
  for (int l = 0; l < D; ++l) {
    double block = 0, ratio = 0, attn = 0, mlp = 0, norm = 0;
    for (const auto& r : p.rows) {
      if (r.layer != l) continue;
      if (r.component == "block") block = r.norm, ratio = r.ratio;
      if (r.component == "attn") attn = r.norm;
      if (r.component == "mlp") mlp = r.norm;
      if (r.component == "norm") norm = r.norm;
    }
    std::printf("%5d  %-13s  %-9s  %-9s  %-9s  %-9s\n", l, fmt("%.6g", block).c_str(), fmt("%.4f", ratio).c_str(),
                fmt("%.4g", attn).c_str(), fmt("%.4g", mlp).c_str(), fmt("%.4g", norm).c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  shapelaw::tune_cpu_runtime("probe-grads", argv);
  return tool_main("probe-grads", [&]() -> int {
    CLI::App app{"Per-layer gradient persistence of train runs: measure norms, fit tau, summarize for fit-law."};
    app.set_version_flag("--version", shapelaw::tool_version("probe-grads") + "\nLibTorch " + shapelaw::compat::torch_version() +
                                           "\nBLAS: " + shapelaw::blas_description());
    app.footer(kFooter);
    app.require_subcommand(1);

    // measure
    MeasureOptions mo;
    std::string measure_out;
    bool quiet = false;
    auto* measure = app.add_subcommand("measure", "gradient norms per layer and component of one checkpoint");
    measure->add_option("run", mo.run, "run directory (or its checkpoints/, or one step_N checkpoint)")->required();
    measure->add_option("--step", mo.step, "checkpoint step (default: the newest complete one)");
    measure->add_option("--data", mo.data, "shard directory (default: the run's --data)");
    measure->add_option("--tokenizer-model", mo.tokenizer_model, "tokenizer (sentencepiece model or GPT-2 directory) to check against the manifest");
    measure->add_option("--split", mo.split, "split the batches come from")->capture_default_str();
    measure->add_option("--batches,-K", mo.batches, "K: batches averaged over")->capture_default_str()
        ->check(positive_number());
    measure->add_option("--batch-size,-B", mo.batch_size, "sequences per batch")->capture_default_str()
        ->check(positive_number());
    measure->add_option("--micro-batch", mo.micro_batch, "sequences per forward/backward (0: whole batch)")
        ->capture_default_str();
    measure->add_option("--seed", mo.seed, "seed of the window order")->capture_default_str();
    measure->add_flag("--replay-train-step", mo.replay_train_step,
                      "use the train batch that follows the checkpoint (equals train's grad_norms.csv at step+1)");
    measure->add_option("--device", mo.device, "cpu | cuda[:N]")->capture_default_str();
    measure->add_option("--precision", mo.precision, "fp32 | bf16 (cuda; default fp32, replay: the run's)");
    measure->add_option("--threads", mo.threads, "CPU intra-op threads (0: all cores)")->capture_default_str();
    measure->add_option("--out,-o", measure_out, "output directory (default: RUN/grad_probe/step_<STEP>; two files, so not '-')");
    measure->add_flag("--quiet,-q", quiet, "no table on stdout");

    // fit
    DecayFitOptions fo;
    std::string fit_in, fit_out, train_log, component = "block", format = "text";
    long long log_step = -1;
    bool unweighted = false;
    auto* fit = app.add_subcommand("fit", "fit the exponential decay of one profile: tau, CI, R^2, D_crit");
    fit->add_option("profile", fit_in, "directory with grad_profile.csv (or the CSV)");
    fit->add_option("--train-log", train_log, "fit one step of train's grad_norms.csv instead");
    fit->add_option("--log-step", log_step, "with --train-log: the logged step (default: the last)");
    fit->add_option("--component", component, "block | attn | mlp | norm")
        ->check(CLI::IsMember({"block", "attn", "mlp", "norm"}))->capture_default_str();
    fit->add_option("--exclude-first", fo.exclude_first, "leave the first N layers out of the fit")
        ->capture_default_str()->check(non_negative_number());
    fit->add_option("--exclude-last", fo.exclude_last, "leave the last N layers out of the fit")
        ->capture_default_str()->check(non_negative_number());
    fit->add_flag("--unweighted", unweighted, "equal weights (default: 1/var of ln norm from the batch spread)");
    fit->add_flag("--through-origin", fo.through_origin, "fix the intercept at 0 (ratio 1 at the last layer)");
    fit->add_option("--min-r2", fo.min_r2, "flag fits below this R^2 as poor_fit")->capture_default_str();
    fit->add_option("--confidence", fo.confidence, "confidence level of the intervals")->capture_default_str()
        ->check(CLI::Range(0.5, 0.9999));
    fit->add_option("--out,-o", fit_out, "grad_fit.json path (default: next to the profile; '-': stdout, instead of the report)");
    fit->add_option("--format", format, "stdout: text | json")->check(CLI::IsMember({"text", "json"}));

    // summarize
    std::vector<std::string> sum_in;
    std::string sum_out = "-";
    SummarizeOptions so;
    auto* summarize = app.add_subcommand("summarize", "gather grad_fit.json files into one tau table for fit-law --tau");
    summarize->add_option("inputs", sum_in, "grad_fit.json files or directories searched for them")->required();
    summarize->add_option("--out,-o", sum_out, "CSV path ('-' = stdout, the default)")->capture_default_str();
    summarize->add_option("--step", so.step, "keep only fits of this step");
    summarize->add_flag("--only-valid", so.only_valid, "drop runs without a finite positive tau (still warned about)");

    if (const int rc = parse_command_line(app, argc, argv, "probe-grads"); rc >= 0) return rc;

    if (measure->parsed()) {
      if (is_stdout(measure_out))
        throw Error("measure --out -: measure writes a directory (grad_profile.csv and grad_profile.json), not one "
                    "file; give a directory (the table on stdout is the profile)");
      GradProfile p = measure_gradients(mo);
      const long long step = p.meta["step"].get<long long>();
      std::string out = measure_out.empty()
                            ? (fs::path(p.meta["run_dir"].get<std::string>()) / "grad_probe" /
                               ("step_" + std::to_string(step))).string()
                            : measure_out;
      write_profile(out, p);
      if (!quiet) print_profile(p);
      std::fprintf(stderr, "probe-grads: step %lld, %d layers, %d batch(es) of %d x %d tokens, loss %.4f, %.2f s -> %s\n",
                   step, p.depth(), p.batches(), p.meta["batch_size"].get<int>(), p.meta["seq_len"].get<int>(),
                   p.meta["loss_mean"].get<double>(), p.meta["wall_seconds"].get<double>(),
                   (out + "/grad_profile.csv").c_str());
      if (p.depth() < 2) std::fprintf(stderr, "probe-grads: warning: one layer: this profile has no decay to fit\n");
      return 0;
    }

    if (fit->parsed()) {
      if (fit_in.empty() == train_log.empty()) throw Error("fit: give a profile directory or --train-log (one of them)");
      if (log_step >= 0 && train_log.empty()) throw Error("--log-step needs --train-log");
      fo.weighted = !unweighted;
      GradProfile p;
      std::string profile_path, out_dir;
      if (!train_log.empty()) {
        p = profile_from_train_log(train_log, log_step);
        fs::path dir = fs::path(train_log).parent_path();
        out_dir = ((dir.empty() ? fs::path(".") : dir) / "grad_probe" /
                   ("trainlog_step_" + std::to_string(p.meta["log_step"].get<long long>()))).string();
        if (fit_out.empty()) write_profile(out_dir, p);  // so summarize finds profile and fit together
        profile_path = train_log;
      } else {
        p = read_profile(fit_in);
        profile_path = fs::is_directory(fit_in) ? (fs::path(fit_in) / "grad_profile.csv").string() : fit_in;
        out_dir = fs::path(profile_path).parent_path().string();
        if (out_dir.empty()) out_dir = ".";
      }
      std::vector<double> norms, se;
      component_series(p, component, norms, se);
      if (norms.size() < 2)
        throw Error(profile_path + ": one layer: no decay to fit (gradient persistence needs depth >= 2)");
      DecayFit f = fit_decay(norms, se, fo);
      nlohmann::json record = fit_record(p, component, f, fo, profile_path);
      const std::string out = fit_out.empty() ? out_dir + "/grad_fit.json" : fit_out;
      write_output(out, record.dump(2) + "\n");
      if (is_stdout(out)) {
        // the record is stdout: no report after it
      } else if (format == "json") {
        std::cout << record.dump(2) << "\n";
      } else {
        const std::string pct = fmt("%.0f", 100 * fo.confidence);
        std::printf("run %s, step %s, depth %d, width %s, component %s, %d layers fitted%s\n",
                    p.meta.value("run_id", std::string("?")).c_str(),
                    p.meta.contains("step") ? p.meta["step"].dump().c_str() : "?", f.depth,
                    p.meta.contains("width") ? p.meta["width"].dump().c_str() : "?", component.c_str(), f.n,
                    f.weighted ? " (weighted)" : " (unweighted)");
        std::printf("tau    %s  [%s, %s] (%s%% CI)\n", fmt("%.4g", f.tau).c_str(), fmt("%.4g", f.tau_lo).c_str(),
                    fmt("%.4g", f.tau_hi).c_str(), pct.c_str());
        std::printf("D_crit %s  [%s, %s]  (gradient side: 1 + tau)\n", fmt("%.4g", f.dcrit).c_str(),
                    fmt("%.4g", f.dcrit_lo).c_str(), fmt("%.4g", f.dcrit_hi).c_str());
        std::printf("slope  %s +- %s per layer, R^2 %s, first-layer ratio %s\n", fmt("%.4g", f.slope).c_str(),
                    fmt("%.2g", f.slope_se).c_str(), fmt("%.4f", f.r2).c_str(),
                    fmt("%.4g", f.first_layer_ratio).c_str());
      }
      if (!f.flags.empty()) {
        std::string flags;
        for (auto& s : f.flags) flags += (flags.empty() ? "" : ", ") + s;
        std::fprintf(stderr, "probe-grads: flags: %s\n", flags.c_str());
      }
      if (!is_stdout(out)) std::fprintf(stderr, "probe-grads: wrote %s\n", out.c_str());
      return 0;
    }

    SummaryTable t = summarize_fits(sum_in, so);
    for (const auto& w : t.warnings) std::fprintf(stderr, "probe-grads: warning: %s\n", w.c_str());
    write_output(sum_out, t.csv);
    if (!is_stdout(sum_out))
      std::fprintf(stderr, "probe-grads: %d row(s) from %zu file(s) -> %s\n", t.rows, t.files.size(), sum_out.c_str());
    return 0;
  });
}
