#include "plan/memory_plan.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "util/error.h"

namespace shapelaw {
namespace {

constexpr int64_t kFp32 = 4;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void PlanOptions::validate() const {
  auto fail = [](const std::string& m) { throw Error("plan: " + m); };
  model.validate();
  if (micro_batch < 1) fail("--micro-batch must be >= 1");
  if (batch_tokens < 1) fail("--batch-tokens must be >= 1");
  if (world < 1) fail("--world-size must be >= 1");
  if (zero < 0 || zero > 2) fail("--zero must be 0, 1 or 2 (got " + std::to_string(zero) + ")");
  if (!(gpu_memory > 0)) fail("--gpu-memory must be positive");
  if (!(reserve_fraction >= 0 && reserve_fraction < 1)) fail("--reserve-fraction must be in [0, 1)");
  if (bucket_bytes < 1) fail("--bucket-mb must be positive");
  if (!(mfu > 0 && mfu <= 1)) fail("--mfu must be in (0, 1] (got " + fmt("%g", mfu) + ")");
  if (!(peak_flops > 0)) fail("--peak must be positive");
}

// Bytes per saved tensor follow the model's forward (lib/model/model.cpp) as autograd
// keeps it: the residual stream is fp32 (the embedding and the residual adds are not
// autocast), matmul inputs are saved in the compute dtype (under autocast: the bf16 copy
// the matmul casts to), every norm saves its input. With n = tokens of the micro-batch,
// one "unit" is n x width elements.
ActivationBytes activation_bytes(const PlanOptions& o, int64_t micro_batch) {
  const ModelConfig& m = o.model;
  // the head's matmuls run over the padding rows on a GPU and not on the CPU (model/head_loss.h)
  const int64_t n = micro_batch * m.seq_len, W = m.width, H = m.mlp_hidden(), V = o.cuda ? m.padded_vocab() : m.vocab_size;
  const int64_t a = m.heads(), s = m.seq_len, L = m.depth;
  const int64_t c = o.bf16 ? 2 : kFp32;  // compute dtype
  const int64_t unit = n * W;
  const bool swiglu = m.mlp == "swiglu";
  // layernorm keeps mean and rstd; our rmsnorm (a composition) also keeps the normalized x
  const int64_t norm_extra = m.norm == "rmsnorm" ? kFp32 * unit + kFp32 * n : 2 * kFp32 * n;
  // attention saved: CPU textbook (model/torch_compat.h): contiguous copies of q, k, v and
  // the softmax output [B*H, T, T]; fused kernel: q and k after RoPE, v as a view of the
  // qkv output (which keeps all of it), the output and the fp32 log-sum-exp.
  const bool fused = o.cuda;
  const int64_t attention = fused ? 7 * c * unit + kFp32 * a * n  // q, k, qkv (3), out, proj input
                                  : 4 * c * unit + c * a * s * n;  // q, k, v copies, proj input; softmax
  const int64_t mlp = (swiglu ? 4 : 2) * c * H * n;  // gelu: fc out, gelu out; swiglu: gate, silu, fc, product
  ActivationBytes r;
  r.layer_input = kFp32 * unit;
  r.per_layer = 2 * kFp32 * unit         // block input x and mid-block residual h (saved by the norms)
                + 2 * c * unit           // norm outputs as saved by qkv and fc
                + attention + mlp + 2 * norm_extra;
  // A block's backward, above what it saved: the residual stream's gradient, plus the MLP's
  // gradient temporaries (its saved tensors are freed as each node finishes), or later,
  // once the MLP's tensors are gone, attention's (textbook: the gradients of the softmax
  // output and of the scores).
  const int64_t mlp_tmp = (swiglu ? 2 : 1) * c * H * n;
  const int64_t attention_tmp = (fused ? 4 * c * unit : 2 * c * a * s * n + 2 * c * unit) - mlp - c * unit - kFp32 * unit;
  r.layer_backward = kFp32 * unit + std::max(mlp_tmp, attention_tmp);
  r.outside_blocks = kFp32 * unit + c * unit + norm_extra;  // last hidden state, final norm output
  // head (model/head_loss.h): fused on the CPU, the logits become their own gradient in
  // place; unfused (CPU autocast), fp32 log-probabilities saved, and in backward their
  // gradient and the logits'; chunked on a GPU, dh and the fp32 dU kept, and one chunk's
  // logits (compute dtype) over the padded columns with, while log_softmax runs, their fp32
  // copy (ATen converts on read only Half, so bf16 is copied first; fp32 is not) and the fp32
  // log-probabilities; after it, the probabilities' cast takes the copy's place (c <= 4
  // bytes). The weight's bf16 copy is autocast's cached one, in weight_copies.
  if (o.cuda) {
    const int64_t rows = std::min(n, head_chunk_rows(m.vocab_size));
    const int64_t per_logit = c + kFp32 + (c == kFp32 ? 0 : kFp32);
    r.head = kFp32 * unit + kFp32 * V * W + rows * per_logit * V;
  } else {
    r.head = !o.bf16 ? kFp32 * n * V : 3 * kFp32 * n * V;
  }
  if (o.bf16) {
    const ParamCounts p = count_parameters(m);
    r.weight_copies = 2 * (p.non_embedding + m.padded_vocab() * W);
  }
  // evaluation's head: the logits in the compute dtype, their fp32 copy (none when they
  // are fp32 already) and the fp32 log-probabilities, over every row on the CPU
  const int64_t eval_rows = o.cuda ? std::min(n, head_chunk_rows(m.vocab_size)) : n;
  const int64_t eval_head = eval_rows * V * (c + (c == kFp32 ? 0 : kFp32) + kFp32);
  r.evaluation = r.weight_copies + kFp32 * unit + std::max(r.per_layer, eval_head);
  if (o.bf16) {  // a bf16 run also reports its validation loss evaluated in fp32 (train/trainer.cpp)
    PlanOptions fp32 = o;
    fp32.bf16 = false;
    r.evaluation = std::max(r.evaluation, activation_bytes(fp32, micro_batch).evaluation);
  }
  r.without_recompute = L * r.per_layer + r.outside_blocks + r.weight_copies + std::max(r.head, r.layer_backward);
  r.with_recompute = L * r.layer_input + r.outside_blocks + r.weight_copies +
                     std::max(r.head, r.per_layer + r.layer_backward);
  return r;
}

int64_t runtime_overhead_bytes(const PlanOptions& o) {
  if (!o.cuda) return 0;
  const int64_t context = int64_t(1000) << 20, blas = int64_t(64) << 20;
  const int64_t nccl = o.world > 1 ? int64_t(2 * 32 * 4 + 256) << 20 : 0;
  return context + blas + nccl;
}

Plan make_plan(const PlanOptions& o) {
  o.validate();
  Plan p;
  p.options = o;
  const int64_t seq = o.model.seq_len;
  if (o.batch_tokens % seq != 0)
    throw Error("plan: --batch-tokens " + std::to_string(o.batch_tokens) + " is not a multiple of seq_len " +
                std::to_string(seq));
  const int64_t sequences = o.batch_tokens / seq;
  if (sequences % (o.micro_batch * o.world) != 0)
    throw Error("plan: --batch-tokens " + std::to_string(o.batch_tokens) + " = " + std::to_string(sequences) +
                " sequences is not divisible by micro_batch x world = " + std::to_string(o.micro_batch * o.world));
  p.sequences_per_rank = sequences / o.world;
  p.accumulation = p.sequences_per_rank / o.micro_batch;
  p.steps = o.steps;
  p.tokens = o.steps * o.batch_tokens;
  p.params = count_parameters(o.model);
  const int64_t P = p.params.allocated, shard = ceil_div(P, o.world);  // the padding rows are held too
  p.weights = kFp32 * P;
  p.gradients = kFp32 * (o.zero >= 2 ? shard : P);
  p.moments = 2 * kFp32 * (o.zero >= 1 ? shard : P);
  // Collective buffers of data parallel: one flattened bucket and its reduced copy; with
  // ZeRO-2 the same two, a bucket staging its gradients and the one being sent.
  p.buffers = o.world > 1 ? 2 * o.bucket_bytes : 0;
  const int64_t state = p.weights + p.gradients + p.moments + p.buffers;
  auto used = [&](const ActivationBytes& a) { return o.activation_checkpointing ? a.with_recompute : a.without_recompute; };
  p.activations = activation_bytes(o, o.micro_batch);
  p.activations_used = used(p.activations);
  p.runtime = runtime_overhead_bytes(o);
  // allocated peak -> what the device must have: the allocator's reserve, the runtime
  auto required = [&](int64_t peak) {
    return peak + (o.cuda ? int64_t(std::ceil(double(peak) * o.reserve_fraction)) : 0) + p.runtime;
  };
  p.peak = state + p.activations_used;
  p.evaluation_peak = state + p.activations.evaluation;
  const int64_t larger_peak = std::max(p.peak, p.evaluation_peak);
  p.required = required(larger_peak);
  p.reserve = p.required - larger_peak - p.runtime;
  p.margin = int64_t(o.gpu_memory) - p.required;
  p.fits = double(p.required) <= o.gpu_memory;
  p.host = std::max(p.weights, o.zero >= 1 ? p.moments : 0);
  for (int64_t m = p.sequences_per_rank; m >= 1; --m) {
    if (p.sequences_per_rank % m != 0) continue;
    const ActivationBytes a = activation_bytes(o, m);
    if (double(required(state + std::max(used(a), a.evaluation))) <= o.gpu_memory) {
      p.max_micro_batch = m;
      break;
    }
  }
  p.model_flops_per_token = flops_per_token(o.model);
  // recomputation runs every block's forward once more: its matmuls and attention scores
  const double recompute_per_token = o.activation_checkpointing
                                         ? 2.0 * double(p.params.non_embedding) +
                                               4.0 * o.model.depth * double(o.model.width) * seq
                                         : 0.0;
  p.flops_per_step = (p.model_flops_per_token + recompute_per_token) * double(o.batch_tokens);
  p.flops_per_run = p.flops_per_step * double(o.steps);
  p.seconds = p.flops_per_run / (o.mfu * o.peak_flops * o.world);
  p.gpu_hours = p.seconds * o.world / 3600.0;
  return p;
}

nlohmann::json to_json(const Plan& p) {
  const PlanOptions& o = p.options;
  const ActivationBytes& a = p.activations;
  return {{"format", "shapelaw.plan"},
          {"version", 1},
          {"model", to_json(o.model)},
          {"params", {{"total", p.params.total}, {"non_embedding", p.params.non_embedding},
                      {"embedding", p.params.embedding}, {"paper_12DW2", p.params.paper_12DW2},
                      {"allocated", p.params.allocated}}},
          {"device", o.cuda ? "cuda" : "cpu"},
          {"precision", o.bf16 ? "bf16" : "fp32"},
          {"attention", o.cuda ? "fused" : "textbook"},
          {"head_loss", o.cuda ? "chunked" : !o.bf16 ? "fused" : "unfused"},
          {"world_size", o.world},
          {"zero", o.zero},
          {"probe_steps", o.probe_steps},
          {"activation_checkpointing", o.activation_checkpointing},
          {"micro_batch", o.micro_batch},
          {"accumulation", p.accumulation},
          {"sequences_per_rank", p.sequences_per_rank},
          {"steps", p.steps},
          {"tokens", p.tokens},
          {"bytes_per_rank",
           {{"weights", p.weights},
            {"gradients", p.gradients},
            {"optimizer_moments", p.moments},
            {"collective_buffers", p.buffers},
            {"activations",
             {{"per_layer", a.per_layer}, {"layer_input", a.layer_input}, {"layer_backward", a.layer_backward},
              {"outside_blocks", a.outside_blocks}, {"head", a.head}, {"weight_copies", a.weight_copies},
              {"without_recompute", a.without_recompute}, {"with_recompute", a.with_recompute},
              {"used", p.activations_used}, {"evaluation", a.evaluation}}},
            {"peak", p.peak},
            {"evaluation_peak", p.evaluation_peak},
            {"allocator_reserve", p.reserve},
            {"runtime", p.runtime},
            {"required", p.required}}},
          {"host_bytes_per_rank", p.host},
          {"gpu_memory", o.gpu_memory},
          {"reserve_fraction", o.cuda ? o.reserve_fraction : 0.0},
          {"margin", p.margin},
          {"fits", p.fits},
          {"max_micro_batch", p.max_micro_batch},
          {"flops", {{"model_per_token", p.model_flops_per_token}, {"per_step", p.flops_per_step},
                     {"per_run", p.flops_per_run}}},
          {"mfu", o.mfu},
          {"peak_flops", o.peak_flops},
          {"seconds", p.seconds},
          {"gpu_hours", p.gpu_hours}};
}

std::string format_plan(const Plan& p) {
  const PlanOptions& o = p.options;
  const ActivationBytes& a = p.activations;
  const double P = double(p.params.total);
  std::string zero = o.zero == 0 ? "plain data parallel" : "ZeRO-" + std::to_string(o.zero);
  std::string s;
  auto line = [&](const std::string& label, double bytes, const std::string& note) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "  %-22s %10s   %s\n", label.c_str(), format_bytes(bytes).c_str(), note.c_str());
    s += buf;
  };
  s += "plan: " + std::to_string(o.model.depth) + "L x " + std::to_string(o.model.width) + "W (" +
       std::to_string(o.model.heads()) + " heads of " + std::to_string(o.model.head_dim) + ", " + o.model.mlp + ", " +
       o.model.norm + "), vocab " + std::to_string(o.model.vocab_size) +
       (o.model.padded_vocab() != o.model.vocab_size ? " (padded to " + std::to_string(o.model.padded_vocab()) + ")" : "") +
       ", seq " + std::to_string(o.model.seq_len) +
       ": " + fmt("%.4g", P) + " parameters\n";
  s += "per rank: " + std::string(o.cuda ? "cuda" : "cpu") + (o.bf16 ? " bf16 autocast" : " fp32") + ", " +
       (o.cuda ? "fused" : "textbook") + " attention, world " + std::to_string(o.world) + ", " + zero + ", micro-batch " +
       std::to_string(o.micro_batch) + " x " + std::to_string(p.accumulation) + " accumulated" +
       (o.activation_checkpointing ? ", activation checkpointing" : "") + "\n";
  if (o.probe_steps)
    s += "probe steps: " + std::to_string(o.probe_steps) + ", each planned as a normal step (" +
         (o.zero ? "the per-layer norms from the ranks' gradient slices" : "the per-layer norms from .grad") + ")\n";
  line("weights", double(p.weights), "fp32, 4 B/param");
  line("gradients", double(p.gradients), o.zero >= 2 ? "fp32, sharded over " + std::to_string(o.world) + " ranks" : "fp32");
  line("AdamW moments", double(p.moments),
       o.zero >= 1 ? "m and v, sharded over " + std::to_string(o.world) + " ranks" : "m and v, 8 B/param");
  if (p.buffers)
    line("collective buffers", double(p.buffers),
         "two buckets of " + format_bytes(double(o.bucket_bytes)) + " (--bucket-mb)" +
             (o.zero >= 2 ? ": one staging gradients, one being sent" : ""));
  line("activations", double(p.activations_used), o.activation_checkpointing ? "with recomputation" : "no recomputation");
  line("  per block", double(a.per_layer), "saved for backward");
  line("  without recompute", double(a.without_recompute), "");
  line("  with recompute", double(a.with_recompute), "block inputs + one block");
  line("  output head", double(a.head),
       o.cuda    ? "chunked: dh and dU kept, one chunk of " + std::to_string(head_chunk_rows(o.model.vocab_size)) + " rows' logits"
       : !o.bf16 ? "fused: logits become their gradient"
                 : "logits, log-probs, gradients");
  if (a.weight_copies) line("  bf16 weight copies", double(a.weight_copies), "autocast cache");
  line("peak", double(p.peak), "allocated to tensors");
  line("evaluation peak", double(p.evaluation_peak),
       "validating: nothing saved for backward, the head's log-probabilities " +
           std::string(o.cuda ? "one chunk at a time" : "for the whole micro-batch"));
  if (o.cuda) {
    line("allocator reserve", double(p.reserve), fmt("%.0f%% of the larger peak (blocks rounded, fragments)", 100 * o.reserve_fraction));
    line("CUDA runtime", double(p.runtime),
         std::string("context and kernels, cuBLAS workspaces") + (o.world > 1 ? ", NCCL buffers" : ""));
  }
  line("required", double(p.required),
       std::string(p.fits ? "fits" : "DOES NOT FIT") + " in --gpu-memory " + format_bytes(o.gpu_memory) + ", margin " +
           format_signed_bytes(double(p.margin)));
  if (o.cuda) line("host memory", double(p.host), "per rank at its start: the fp32 model is built on the CPU");
  s += "largest micro-batch that fits: " +
       (p.max_micro_batch > 0 ? std::to_string(p.max_micro_batch) : std::string("none (state alone does not fit)")) +
       " (of " + std::to_string(p.sequences_per_rank) + " sequences per rank per step)\n";
  s += "compute: " + fmt("%.4g", p.model_flops_per_token) + " model FLOPs/token; " + fmt("%.4g", p.flops_per_step) +
       " FLOPs/step, " + fmt("%.4g", p.flops_per_run) + " per run (" + std::to_string(p.steps) + " steps, " +
       fmt("%.4g", double(p.tokens)) + " tokens)\n";
  s += "time: " + fmt("%.1f", p.seconds / 3600.0) + " h on " + std::to_string(o.world) + " GPU(s), " +
       fmt("%.1f", p.gpu_hours) + " GPU-hours at " + fmt("%.0f%%", 100 * o.mfu) + " of " +
       fmt("%.4g", o.peak_flops) + " FLOP/s\n";
  return s;
}

double parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit((unsigned char)text[i]) || text[i] == '.' || text[i] == 'e' || text[i] == 'E' ||
                             ((text[i] == '+' || text[i] == '-') && i > 0 && (text[i - 1] == 'e' || text[i - 1] == 'E'))))
    ++i;
  double value = 0;
  try {
    size_t used = 0;
    value = std::stod(text.substr(0, i), &used);
    if (used != i) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    throw Error("'" + text + "': expected a size such as 80GiB, 141GB or a number of bytes");
  }
  std::string unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  static const std::pair<const char*, double> units[] = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
      {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (auto& [name, scale] : units)
    if (unit == name) {
      if (!(value > 0)) break;
      return value * scale;
    }
  throw Error("'" + text + "': expected a positive size such as 80GiB, 141GB or a number of bytes");
}

std::string format_bytes(double bytes) {
  if (bytes >= 1e12) return fmt("%.2f TB", bytes / 1e12);
  if (bytes >= 1e9) return fmt("%.1f GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt("%.1f MB", bytes / 1e6);
  if (bytes >= 1e3) return fmt("%.1f kB", bytes / 1e3);
  return fmt("%.0f B", bytes);
}

std::string format_signed_bytes(double bytes) { return (bytes < 0 ? "-" : "") + format_bytes(std::fabs(bytes)); }

}  // namespace shapelaw
