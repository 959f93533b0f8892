#include "train/run_eval.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <torch/torch.h>

#include "compat/torch_compat.h"
#include "train/checkpoint.h"
#include "train/cpu_threads.h"
#include "train/evaluate.h"
#include "train/kernel_record.h"
#include "train/run_checkpoint.h"
#include "util/error.h"

namespace shapelaw {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Loss of every target token of the windows, [n, seq] on the CPU (double sums need no
// more): the per-document losses are means of these.
torch::Tensor token_losses(TransformerImpl& model, const torch::Tensor& windows, int64_t micro,
                           const torch::Device& device) {
  model.eval();
  torch::NoGradGuard no_grad;
  const int64_t n = windows.size(0), seq = windows.size(1) - 1;
  std::vector<torch::Tensor> parts;
  for (int64_t i = 0; i < n; i += micro) {
    auto w = windows.slice(0, i, std::min(n, i + micro)).to(device);
    auto logits = model.forward(w.slice(1, 0, seq)).to(torch::kFloat32);
    auto nll = torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}), w.slice(1, 1, seq + 1).reshape({-1}),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    parts.push_back(nll.reshape({w.size(0), seq}).to(torch::kCPU, torch::kFloat64));
  }
  return torch::cat(parts);
}

}  // namespace

json evaluate_run(const RunEvalOptions& o) {
  const RunCheckpoint run = open_run_checkpoint(o.run, o.step, "train eval");
  const TrainConfig& cfg = run.config;
  const TokenDataset dataset = open_run_data(run, o.data, o.tokenizer_model);
  const std::string manifest = dataset.directory() + "/manifest.json";
  if (!dataset.has_split(o.split)) throw Error(located(manifest, 0, "no split '" + o.split + "'"));
  const TokenSplit& split = dataset.split(o.split);
  const int64_t seq = cfg.model.seq_len, window = seq + 1;
  if (o.max_tokens < -1) throw Error("--tokens must be >= 0 (0: the whole split)");
  const int64_t wanted = o.max_tokens < 0 ? cfg.val_tokens : o.max_tokens == 0 ? int64_t(split.num_tokens()) : o.max_tokens;
  const torch::Tensor windows = load_eval_windows(dataset, o.split, wanted, window);
  if (!windows.defined())
    throw Error(located(manifest, 0, "split '" + o.split + "' has " + std::to_string(split.num_tokens()) +
                                         " tokens, fewer than one window of " + std::to_string(window) +
                                         " (the run's seq_len + 1)"));

  if (o.device != "cpu" && o.device.rfind("cuda", 0) != 0)
    throw Error("--device must be cpu or cuda[:N] (got '" + o.device + "')");
  if (o.device != "cpu" && !torch::cuda::is_available())
    throw Error("--device " + o.device + ": no CUDA device available (this LibTorch " + compat::torch_version() + ")");
  const torch::Device device(o.device);
  const int threads = use_cpu_threads(o.threads);
  Transformer model = load_checkpoint_model(run.ref.dir, device);
  // The trainer's own evaluation: on the validation split with the run's --val-tokens
  // and micro-batch this is the run's final_val_loss (fp32; bf16 runs differ by rounding).
  const double loss = estimate_loss(*model, windows, cfg.micro_batch, device, /*bf16=*/false);
  if (!std::isfinite(loss)) {
    int64_t bad = 0, total = 0;
    for (auto& p : model->parameters()) {
      bad += (~torch::isfinite(p)).sum().item<int64_t>();
      total += p.numel();
    }
    throw Error(located(run.ref.dir + "/model.pt", 0,
                        "the loss is " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " (" + std::to_string(bad) +
                            " of " + std::to_string(total) + " weights are non-finite): the model diverged; "
                            "evaluate an earlier checkpoint (--step)"));
  }

  const int64_t n = windows.size(0);
  const bool capped = n < std::max<int64_t>(1, wanted / window);
  json record = {{"format", "shapelaw.eval"},
                 {"version", 1},
                 {"run_id", cfg.run_id},
                 {"run_dir", run.ref.run_dir},
                 {"checkpoint", run.ref.dir},
                 {"step", run.ref.step},
                 {"tokens_trained", run.ref.state.value("tokens", json())},
                 {"data", dataset.directory()},
                 {"data_manifest_sha256", dataset.manifest_sha256()},
                 {"tokenizer_sha256", dataset.tokenizer_sha256()},
                 {"tokenizer_kind", dataset.tokenizer().kind},
                 {"same_data_as_training", dataset.manifest_sha256() == run.ref.state.value("data_manifest_sha256", "")},
                 {"split", o.split},
                 {"split_tokens", split.num_tokens()},
                 {"split_documents", split.num_documents()},
                 {"seq_len", seq},
                 {"windows", n},
                 {"tokens_requested", wanted},
                 {"tokens_read", n * window},
                 {"target_tokens", n * seq},
                 {"capped", capped},
                 {"micro_batch", cfg.micro_batch},
                 {"device", device.str()},
                 {"precision", "fp32"},  // as summary.json's final_val_loss_fp32 of a bf16 run
                 {"threads", threads},
                 {"kernels", to_json(current_kernel_record())},  // always the fixed set (tools/train.cpp)
                 {"loss", std::isfinite(loss) ? json(loss) : json()}};
  if (capped)
    record["cap"] = "--tokens " + std::to_string(wanted) + " capped to the split: " + std::to_string(n) +
                    " windows of " + std::to_string(window);

  if (o.per_document) {
    // Window j covers split tokens [j*window, (j+1)*window); its targets are tokens
    // j*window+1 .. j*window+seq, each charged to the document it belongs to (a
    // document's EOS to that document). Documents cut by the cap count what was read.
    const torch::Tensor losses = token_losses(*model, windows, cfg.micro_batch, device).contiguous();
    const double* l = losses.data_ptr<double>();
    json documents = json::array();
    uint64_t doc = 0, doc_end = split.document_end(0);
    double sum = 0;
    int64_t count = 0;
    auto flush = [&] {
      if (count > 0) documents.push_back({{"document", doc}, {"target_tokens", count}, {"loss", sum / double(count)}});
      sum = 0;
      count = 0;
    };
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < seq; ++k) {
        const uint64_t position = uint64_t(j * window + 1 + k);
        while (position >= doc_end) {
          flush();
          doc_end = split.document_end(++doc);
        }
        sum += l[j * seq + k];
        ++count;
      }
    flush();
    record["documents"] = documents;
  }
  return record;
}

}  // namespace shapelaw
