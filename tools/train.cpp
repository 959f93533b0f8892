// train: trains one depth x width transformer on a shard directory (see docs/formats.md,
// "train outputs"). Every hyperparameter is a flag; --config FILE.json gives defaults
// (keys as in summary.json's "config"), flags given on the command line override it.
// `train eval RUN` evaluates a checkpoint of a run on any split (train/run_eval.h).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/equal_params.h"
#include "train/distributed.h"
#include "train/run_eval.h"
#include "train/synthetic_data.h"
#include "compat/torch_compat.h"
#include "kernels/kernel_set.h"
#include "plan/layout.h"
#include "plan/memory_plan.h"
#include "shards/dataset.h"
#include "train/kernel_record.h"
#include "train/run_plan.h"
#include "train/train_config.h"
#include "util/atomic_file.h"
#include "util/build_info.h"
#include "util/cpu_runtime.h"
#include "util/error.h"
#include "util/output.h"
#include "util/command_line.h"
#include "util/tool_main.h"

namespace {

const char* kFooter = R"(FLOPs per token (summary.json "flops_per_token"), PaLM-style:
  6 * (N_non_embedding + V*W) + 12 * D * W * seq_len
i.e. every weight matmul incl. the output head, forward + backward, plus attention
scores and A.V without a causal discount; compute_flops = 6 * N_non_embedding * T.
Re-running the same command on the same --out continues from the newest complete
checkpoint; a changed configuration is refused, and so is a longer --steps/--tokens (the
cosine schedule depends on the length: train the longer run in another --out).
Evaluate any checkpoint on any split: train eval RUN [--step N] [--data DIR] --split test
[--per-document] [-o FILE] (train eval --help).
Data parallel: launch with torchrun --standalone --no_python --nproc_per_node N train ... (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT; loopback:29500 by default) or as the
tasks of an srun step (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID; rank 0's host
from SLURM_STEP_NODELIST, port 20000 + (97 x job id + step id) mod 10000, so each step of
a job has its own, unless MASTER_ADDR/MASTER_PORT are set; one GPU per task with
--gpus-per-task=1 works). Slurm's variables outside an srun step (an sbatch script) are
ignored: one process.
--plan: the same flags as a run; prints per rank the bytes of weights, gradients,
AdamW moments and activations, the largest micro-batch that fits --gpu-memory, and
FLOPs, time and GPU-hours at --mfu of --peak; allocates nothing, connects to nothing.
--plan-grid GRID: one line per grid row (its flags after the others) with the layout
that fits by construction (GPUs up to --plan-gpus, ZeRO-1, recomputation, micro-batch
at most --micro-batch), and the totals; --format make prints RUN:GPUS:FITS:FLAGS.)";

// `train --plan`: what the run would need, without running it.
struct PlanRequest {
  bool plan = false;
  int world_size = 0;  // 0: the launcher's environment
  std::string gpu_memory = "81559MiB", format = "human", grid;
  double mfu = 0.40, peak = 989e12, reserve_fraction = 0.10;
  int gpus = 1;
};

void add_plan_options(CLI::App& app, PlanRequest& r) {
  const char* group = "Plan (--plan)";
  app.add_flag("--plan", r.plan, "print the memory and cost plan of the run and exit (nothing is allocated)")->group(group);
  app.add_option("--world-size", r.world_size, "data-parallel ranks to plan for (default: the launcher's WORLD_SIZE, or an srun step's tasks)")
      ->group(group);
  app.add_option("--gpu-memory", r.gpu_memory,
                 "memory per GPU the plan must fit (default: an H100 80GB's total, as nvidia-smi says; 143771MiB an H200)")
      ->capture_default_str()->group(group);
  app.add_option("--reserve-fraction", r.reserve_fraction,
                 "CUDA: the caching allocator's reserve over the allocated peak that the plan adds")
      ->capture_default_str()->group(group);
  app.add_option("--mfu", r.mfu, "utilization of --peak assumed for time and GPU-hours")->capture_default_str()->group(group);
  app.add_option("--peak", r.peak, "peak FLOP/s per GPU (default: H100 dense bf16)")->capture_default_str()->group(group);
  app.add_option("--format", r.format, "human | json (| make with --plan-grid)")->capture_default_str()->group(group);
  app.add_option("--plan-grid", r.grid, "plan every row of a study grid file (pipelines/grids/*.grid)")->group(group);
  app.add_option("--plan-gpus", r.gpus, "GPUs a grid row may take (1, 2, 4, ... up to this)")->capture_default_str()
      ->group(group);
}

// One CLI option per row of the option tables (train/train_config.h, model/model_config.h).
template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

void add_options(CLI::App& app, shapelaw::TrainConfig& c) {
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // last flag wins
  auto add = [&app](const char* group) {
    return [&app, group](const shapelaw::OptionInfo& o, auto& member) {
      using T = std::remove_reference_t<decltype(member)>;
      if (!*o.flag) return;  // JSON only
      CLI::Option* opt;
      if constexpr (std::is_same_v<T, bool>) {
        opt = app.add_flag(o.flag, member, o.help);
      } else {
        opt = app.add_option(o.flag, member, o.help);
        if constexpr (is_vector<T>::value) opt->delimiter(',')->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        if (o.show_default) opt->capture_default_str();
      }
      opt->group(*o.help ? group : "");
    };
  };
  shapelaw::visit_model_options(c.model, add("Model"));
  shapelaw::visit_train_options(c, add("Options"));
  app.add_option("--debug-kill-at-step", c.debug_kill_at_step, "testing: SIGKILL self at this step")->group("");
  app.add_option("--debug-kill-phase", c.debug_kill_phase, "testing: step | checkpoint | sigterm")->group("");
}

// Parses a train command line (argv[0] is the program): returns -1 to go on, else the
// exit code (--help, --version, a parse error).
// train shapes: widths at (nearly) equal parameters, as a grid
struct ShapesRequest {
  bool requested = false;
  int64_t target = 0;
  std::vector<int> depths;
  std::string count = "non-embedding", format = "grid", prefix, flags;
};

int parse_command_line(const std::vector<std::string>& args, shapelaw::TrainConfig& config, PlanRequest& plan,
                       std::string& synthetic_dir, uint64_t& synthetic_tokens, ShapesRequest* shapes_request = nullptr) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  const int argc = int(argv.size());
  config = shapelaw::command_line_defaults();
  // pass 1: only --config, so the file's values become the defaults of pass 2
  {
    CLI::App pre;
    pre.allow_extras();
    pre.set_help_flag();
    std::string config_path;
    pre.add_option("--config", config_path);
    try {
      pre.parse(argc, argv.data());
    } catch (const CLI::ParseError&) {
    }
    if (!config_path.empty()) {
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(shapelaw::read_file(config_path));
      } catch (const nlohmann::json::exception& e) {
        throw shapelaw::Error(config_path + ": invalid JSON: " + e.what());
      }
      config = shapelaw::train_config_from_json(j);
      if (!j.contains("model") || !j["model"].contains("vocab_size")) config.model.vocab_size = 0;
    }
  }
  CLI::App app{"Train one depth x width decoder-only transformer on token shards (LibTorch)."};
  app.set_version_flag("--version", shapelaw::tool_version("train") + "\nLibTorch " + shapelaw::compat::torch_version() +
                                         "\nBLAS: " + shapelaw::blas_description() +
                                         "\nkernels: " + shapelaw::describe(shapelaw::current_kernel_record()) +
                                         "\ndata parallel: " + (shapelaw::Distributed::available()
                                                                      ? shapelaw::Distributed::backends()
                                                                      : std::string("none (single process only)")));
  app.footer(kFooter);
  std::string config_path;
  app.add_option("--config", config_path, "JSON file of options (keys as summary.json's \"config\")");
  add_options(app, config);
  add_plan_options(app, plan);
  bool options_json = false;
  app.add_flag("--options-json", options_json,
               "print every option (key, flag, help, binding, sweepable, default) as JSON and exit: the table the CLI, "
               "the records and the study grids are derived from");
  app.add_option("--make-synthetic-shards", synthetic_dir,
                 "write a shard set of random tokens (vocab --vocab-size, default 50257) to DIR and exit");
  app.add_option("--synthetic-tokens", synthetic_tokens, "tokens in --make-synthetic-shards")->capture_default_str();
  ShapesRequest ignored;
  ShapesRequest& sr = shapes_request ? *shapes_request : ignored;
  auto* shapes = app.add_subcommand("shapes",
                                    "print shapes at (nearly) equal parameters for given depths: for each depth the "
                                    "width (a multiple of --head-dim) whose count is nearest --params, as a grid");
  shapes->add_option("--params", sr.target, "the parameter count to hold equal")->required();
  shapes->add_option("--depths", sr.depths, "depths, e.g. 1,2,4,8,16")->delimiter(',')->required();
  shapes->add_option("--count", sr.count, "non-embedding | 12DW2 | total")->capture_default_str();
  shapes->add_option("--format", sr.format, "grid | table | json")->capture_default_str();
  shapes->add_option("--prefix", sr.prefix, "run-name prefix (default n<params>)");
  shapes->add_option("--flags", sr.flags, "extra train flags appended to every grid row");
  shapes->footer("Other shape options (--head-dim, --vocab-size, --mlp, --norm, --tie-embeddings, --bias) are "
                 "train's, given before `shapes`: e.g. train --head-dim 16 --vocab-size 2048 shapes --params 196608 "
                 "--depths 1,2,4,8,16");
  // listed in --help; main() dispatches `train eval` before this parser, so here it is misplaced
  auto* eval = app.add_subcommand("eval", "evaluate a checkpoint of a run on any split, first on the line: train eval "
                                          "RUN [--step N] [--data DIR] --split test (train eval --help)");
  eval->allow_extras()->callback([] {
    throw CLI::ValidationError("eval", "`eval` must come first: train eval RUN [--step N] --split SPLIT");
  });
  if (const int rc = shapelaw::parse_command_line(app, argc, argv.data(), "train"); rc >= 0) return rc;
  if (options_json) {
    std::cout << shapelaw::options_table_json().dump(1) << "\n";
    return 0;
  }
  shapelaw::uncap_explicit_warmup(config, app.count("--warmup-steps") > 0, app.count("--warmup-cap") > 0);
  sr.requested = bool(*shapes);
  return -1;
}

shapelaw::PlanOptions plan_for(shapelaw::TrainConfig config, const PlanRequest& r, int world) {
  if (config.model.vocab_size == 0) {
    if (config.data.empty()) throw shapelaw::Error("--plan: give --vocab-size (or --data with a manifest)");
    config.model.vocab_size = int64_t(shapelaw::TokenDataset::open(config.data).vocab_size());
  }
  shapelaw::PlanOptions o = shapelaw::plan_options(config, world);
  o.gpu_memory = shapelaw::parse_byte_size(r.gpu_memory);
  o.reserve_fraction = r.reserve_fraction;
  o.mfu = r.mfu;
  o.peak_flops = r.peak;
  return o;
}

int print_plan(const std::vector<std::string>& args, const shapelaw::TrainConfig& config, const PlanRequest& r) {
  if (r.format != "human" && r.format != "json" && !(r.format == "make" && !r.grid.empty()))
    throw shapelaw::Error("--format '" + r.format + "': expected human or json (or make, with --plan-grid)");
  if (r.grid.empty()) {
    const int world = r.world_size > 0 ? r.world_size : shapelaw::Distributed::world_from_env();
    const shapelaw::Plan plan = shapelaw::make_plan(plan_for(config, r, world));
    std::fputs(r.format == "json" ? (shapelaw::to_json(plan).dump(2) + "\n").c_str() : shapelaw::format_plan(plan).c_str(),
               stdout);
    return 0;
  }
  std::vector<shapelaw::GridRow> rows;
  for (const auto& line : shapelaw::read_grid(r.grid)) {
    std::vector<std::string> row_args = args;
    row_args.insert(row_args.end(), line.train_args.begin(), line.train_args.end());
    shapelaw::TrainConfig row;
    PlanRequest ignored;
    std::string synthetic;
    uint64_t tokens = 0;
    if (parse_command_line(row_args, row, ignored, synthetic, tokens) >= 0)
      throw shapelaw::Error(shapelaw::located(r.grid, line.line, "the row's flags do not parse"));
    try {
      rows.push_back({line.run, shapelaw::choose_layout(plan_for(row, r, 1), r.gpus)});
    } catch (const shapelaw::Error& e) {
      throw shapelaw::Error(shapelaw::located(r.grid, line.line, e.what()));
    }
  }
  if (r.format == "json") {
    std::fputs((shapelaw::grid_json(rows).dump(2) + "\n").c_str(), stdout);
  } else if (r.format == "make") {  // one word per run for make: RUN:GPUS:FITS:FLAG,FLAG,...
    for (auto& row : rows) {
      std::string flags = shapelaw::layout_flags(row.plan);
      for (auto& c : flags)
        if (c == ' ') c = ',';
      std::printf("%s:%d:%s:%s\n", row.run.c_str(), row.plan.options.world, row.plan.fits ? "yes" : "no", flags.c_str());
    }
  } else {
    std::fputs(shapelaw::format_grid(rows).c_str(), stdout);
  }
  return 0;
}

// `train eval RUN ...`: its own flags, JSON on stdout or -o FILE.
int eval_main(int argc, char** argv) {
  CLI::App app{"train eval: a checkpoint of a run evaluated on any split of any shard set with the run's tokenizer",
               "train eval"};
  shapelaw::RunEvalOptions o;
  std::string output = "-";
  app.add_option("run", o.run, "run directory (train --out), its checkpoints/, or one step_N directory")->required();
  app.add_option("--step", o.step, "checkpoint step (default: the newest complete one)");
  app.add_option("--data", o.data, "shard directory or manifest (default: the run's --data); its tokenizer is checked");
  app.add_option("--tokenizer-model", o.tokenizer_model, "tokenizer (sentencepiece model or GPT-2 directory): checked against the manifest's hash");
  app.add_option("--split", o.split, "train, validation or test")->capture_default_str();
  app.add_option("--tokens", o.max_tokens,
                 "tokens read from the start of the split, in whole seq_len+1 windows (default: the run's "
                 "--val-tokens; 0: the whole split)");
  app.add_flag("--per-document", o.per_document, "also each document's loss (\"documents\" in the JSON)");
  app.add_option("-o,--output", output, "JSON record ('-' = stdout, the default)")->capture_default_str();
  app.add_option("--device", o.device, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--threads", o.threads, "CPU intra-op threads (0: all cores)")->capture_default_str();
  if (const int rc = shapelaw::parse_command_line(app, argc, argv, "train eval"); rc >= 0) return rc;
  const nlohmann::json record = shapelaw::evaluate_run(o);
  shapelaw::Output out(output);
  out.write(record.dump(2) + "\n");
  out.commit();
  std::fprintf(stderr, "train eval: %s step %lld on %s/%s: loss %.4f over %lld target tokens (%lld windows)%s\n",
               record["run_dir"].get<std::string>().c_str(), (long long)record["step"].get<long long>(),
               record["data"].get<std::string>().c_str(), o.split.c_str(),
               record["loss"].is_number() ? record["loss"].get<double>() : std::nan(""),
               (long long)record["target_tokens"].get<long long>(), (long long)record["windows"].get<long long>(),
               record.contains("cap") ? ("; " + record["cap"].get<std::string>()).c_str() : "");
  return 0;
}

// --kernels as the command line (or its --config file) gives it, read before anything
// else: the fixed set's library settings take effect only in a process started with them
// (util/cpu_runtime.h), so train re-executes itself once with them. An invalid value is
// the full parse's to refuse; until then it counts as fixed.
shapelaw::KernelSet requested_kernels(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "eval") return shapelaw::KernelSet::fixed;
  CLI::App pre;
  pre.allow_extras();
  pre.set_help_flag();
  std::string config_path, kernels;
  pre.add_option("--config", config_path)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  pre.add_option("--kernels", kernels)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    pre.parse(argc, argv);
  } catch (const CLI::ParseError&) {
  }
  if (kernels.empty() && !config_path.empty()) {
    try {
      const nlohmann::json j = nlohmann::json::parse(shapelaw::read_file(config_path));
      if (j.contains("kernels") && j["kernels"].is_string()) kernels = j["kernels"].get<std::string>();
    } catch (const std::exception&) {  // the full parse says what is wrong with the file
    }
  }
  return kernels == "native" ? shapelaw::KernelSet::native : shapelaw::KernelSet::fixed;
}

// Whether the command line asks for something that runs no kernel: help, the option
// table, a plan (torch-free arithmetic) or equal-parameter shapes. Those skip the
// re-execution below, which would double a start-up that is LibTorch's (~0.7 s here):
// the study pipelines call train --options-json, --help and --plan-grid while make parses.
bool computes_nothing(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "shapes") return true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "--options-json" || a == "--plan" || a == "--plan-grid" ||
        a.rfind("--plan-grid=", 0) == 0)
      return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const shapelaw::KernelSet kernels = requested_kernels(argc, argv);
  if (!computes_nothing(argc, argv)) shapelaw::tune_cpu_runtime("train", argv, kernels == shapelaw::KernelSet::fixed);
  shapelaw::choose_kernel_set(kernels);
  if (argc > 1 && std::string(argv[1]) == "eval")
    return shapelaw::tool_main("train", [&]() -> int { return eval_main(argc - 1, argv + 1); });
  return shapelaw::tool_main("train", [&]() -> int {
    const std::vector<std::string> args(argv, argv + argc);
    shapelaw::TrainConfig config;
    PlanRequest plan;
    std::string synthetic_dir;
    uint64_t synthetic_tokens = 4'000'000;
    ShapesRequest shapes;
    if (int code = parse_command_line(args, config, plan, synthetic_dir, synthetic_tokens, &shapes); code >= 0)
      return code;
    if (plan.plan || !plan.grid.empty()) return print_plan(args, config, plan);
    if (shapes.requested) {
      auto base = config.model;
      if (base.vocab_size == 0) base.vocab_size = 50257;  // the paper's GPT-2 vocabulary unless given
      auto rows = shapelaw::equal_param_shapes(base, shapes.target, shapes.depths, shapes.count);
      std::fputs(shapelaw::render_equal_param_shapes(rows, shapes.target, shapes.count, shapes.format,
                                                     shapes.prefix.empty() ? "n" + std::to_string(shapes.target)
                                                                           : shapes.prefix,
                                                     shapes.flags)
                     .c_str(),
                 stdout);
      return 0;
    }
    if (!synthetic_dir.empty()) {
      auto vocab = config.model.vocab_size > 0 ? config.model.vocab_size : 50257;
      shapelaw::write_synthetic_shards(synthetic_dir, synthetic_tokens, uint32_t(vocab), config.seed);
      std::fprintf(stderr, "train: wrote %llu synthetic tokens (vocab %lld) to %s\n",
                   (unsigned long long)synthetic_tokens, (long long)vocab, synthetic_dir.c_str());
      return 0;
    }
    if (config.data.empty() || config.out.empty() || config.out == "-") {
      std::fprintf(stderr, "train: error: %s (see --help)\n",
                   config.out == "-" ? "--out: '-' is stdout, but a run's output is a directory: give its path"
                                     : "--data and --out are required");
      return 2;
    }
    return shapelaw::run_training(config);
  });
}
