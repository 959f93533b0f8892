// audit: depth audit of models against a critical-depth law, counterfactual redesigns,
// and consistency checks of published tables. All logic lives in lib/audit/.
//
//   audit [--law paper-log|paper-tau|paper-table10|log:K|power:C,A|fit.json] [--model NAME]
//         models.csv|config.json|DIR ...
//   audit check-table TABLE.csv|DIR ...
//   audit paper          the paper's Tables 4/8/9/10 recomputed with its constants
//   audit laws           D_crit under the paper's forms, side by side
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "audit/audit.h"
#include "audit/fit_record.h"
#include "audit/model_table.h"
#include "audit/numbers.h"
#include "audit/paper_audit.h"
#include "audit/report.h"
#include "audit/table_check.h"
#include "util/build_info.h"
#include "util/error.h"
#include "util/output.h"
#include "util/command_line.h"
#include "util/tool_main.h"

using namespace shapelaw;
using namespace shapelaw::audit;

namespace {

Format checked_format(const std::string& format_text) {
  Format format;
  if (!parse_format(format_text, format))
    throw Error("--format '" + format_text + "': expected markdown, csv or json");
  return format;
}

void emit(const Report& report, const std::string& format_text, const std::string& output) {
  Format format = checked_format(format_text);
  for (const auto& w : report.warnings) std::fprintf(stderr, "audit: warning: %s\n", w.c_str());
  write_output(output.empty() ? "-" : output, render(report, format));
}

int finish(const Report& report) {
  for (const auto& e : report.errors) std::fprintf(stderr, "audit: error: %s\n", e.c_str());
  return report.errors.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return tool_main("audit", [&]() -> int {
    CLI::App app{
        "Audit models against a critical-depth law D_crit(W): D/D_crit, a verdict, and a redesign at equal parameters "
        "with its predicted loss difference. Subcommands check published tables and the paper's own numbers."};
    app.set_version_flag("--version", shapelaw::tool_version("audit"));
    app.fallthrough();
    app.require_subcommand(0, 1);
    std::string format = "markdown", output, law_spec = "paper-log", model_name, n_source = "paper";
    bool keep_going = false;
    std::vector<std::string> inputs;
    AuditOptions ao;
    app.add_option("inputs", inputs, "models CSV (columns in docs/formats.md), Hugging Face config.json, a train summary.json, or a directory "
                 "(its config.json and summary.json files and the Hugging Face configs below it)");
    app.add_option("--format", format, "markdown (default), csv or json")->capture_default_str();
    app.add_option("-o,--output", output, "write the report to this file (atomically; '-': stdout, the default)");
    app.add_flag("--keep-going", keep_going, "skip bad rows/files (each reported on stderr, exit 1) and print the rest");
    app.add_option("--law", law_spec,
                   "paper-log (2.43·ln W, default), paper-tau (2.06·W^0.44), paper-table10 (c·W^0.44 fitted to Table 10), "
                   "log:K, power:C,A, or a fit-law record (*.json)")
        ->capture_default_str();
    app.add_option("--model", model_name, "with a fit record: the model to use (default: its selected_model)");
    app.add_option("--near", ao.verdict.near, "verdict threshold: D/D_crit above this is over-deep")->capture_default_str();
    app.add_option("--far", ao.verdict.far, "verdict threshold: D/D_crit above this is far over-deep")->capture_default_str();
    app.add_option("--redesign-n", n_source,
                   "N kept equal by the redesign: paper (12·D·W², default) or counted (non-embedding, active for MoE)")
        ->check(CLI::IsMember({"paper", "counted"}));
    app.add_option("--multiple", ao.multiple, "redesign width multiple")->capture_default_str()->check(positive_number());
    app.add_option("--tolerance", ao.tolerance, "stated vs counted parameters: relative tolerance")->capture_default_str();
    app.add_flag("--allow-degenerate-law", ao.allow_degenerate,
                 "with a fit record whose capacity term is non-positive (A <= 0): compute ΔL anyway (refused by default)");
    app.add_flag("--dcrit-only", ao.dcrit_only,
                 "only the law's D_crit (95% CI, extrapolation flags): no verdict, redesign or ΔL (how the study report "
                 "quotes a law fitted on small models)");

    CheckOptions co;
    std::vector<std::string> tables;
    std::string mlp_text = "gelu";
    bool no_claims = false, fail_on_flag = false;
    auto* check = app.add_subcommand("check-table",
                                     "recompute parameter counts of a published table (CSV files or directories of them)");
    check->add_option("tables", tables, "CSV files or directories")->required();
    check->add_option("--tolerance", co.tolerance, "flag rows off by more than this relative difference")->capture_default_str();
    check->add_option("--vocab", co.vocab, "vocabulary when the table has no vocab column")->capture_default_str();
    check->add_option("--mlp", mlp_text, "MLP type when the table has no mlp column: gelu (F = 4W), swiglu, geglu")
        ->capture_default_str();
    check->add_flag("--tied", co.tied, "count tied input/output embeddings (default: untied, as the paper)");
    check->add_flag("--no-paper-claims", no_claims, "do not compare rows with the paper's own tables and text");
    check->add_flag("--fail-on-flag", fail_on_flag, "exit 3 when a row is flagged");

    auto* paper = app.add_subcommand("paper", "the paper's Tables 4, 8, 9, 10 and its text recomputed with its constants");
    std::vector<int64_t> widths;
    auto* laws = app.add_subcommand("laws", "D_crit under the paper's three forms, side by side");
    laws->add_option("--width", widths, "extra widths to list");

    if (const int rc = parse_command_line(app, argc, argv, "audit"); rc >= 0) return rc;
    checked_format(format);
    co.keep_going = keep_going;
    co.paper_claims = !no_claims;
    if (!parse_mlp(mlp_text, co.mlp)) throw Error("--mlp '" + mlp_text + "': expected gelu, swiglu or geglu");
    if (!(ao.verdict.near > 1.0 && ao.verdict.far > ao.verdict.near))
      throw Error("--near/--far: need 1 < near < far, got " + fixed(ao.verdict.near, 3) + " and " + fixed(ao.verdict.far, 3));

    if (*check) {
      Report rep = check_tables(tables, co);
      emit(rep, format, output);
      int rc = finish(rep);
      if (rc == 0 && fail_on_flag)
        for (const auto& row : rep.tables.front().rows)
          if (row.value("flagged", false)) return 3;
      return rc;
    }
    if (*paper) {
      emit(paper_report(co, ao.verdict), format, output);
      return 0;
    }
    if (*laws) {
      emit(laws_report(widths), format, output);
      return 0;
    }
    if (inputs.empty())
      throw Error("no input: give a models CSV (e.g. examples/flagship-models.csv), a config.json or a directory "
                  "(see audit --help)");
    ao.n_counted = n_source == "counted";
    const bool law_is_file = law_spec.size() > 5 && lower(law_spec.substr(law_spec.size() - 5)) == ".json";
    if (!model_name.empty() && !law_is_file) throw Error("--model: only meaningful with --law FILE.json");
    Law law = law_is_file ? law_from_fit_file(law_spec, model_name) : builtin_law(law_spec);
    std::vector<std::string> errors;
    auto models = load_models(inputs, keep_going, &errors);
    Report rep = audit_report(models, law, ao);
    rep.errors = errors;
    emit(rep, format, output);
    return finish(rep);
  });
}
