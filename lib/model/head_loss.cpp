#include "model/head_loss.h"

#include <algorithm>
#include <limits>

#include <ATen/Parallel.h>

#include "kernels/softmax_rows.h"
#include "model/model_config.h"
#include "compat/torch_compat.h"

namespace shapelaw {
namespace {

struct FusedHeadCrossEntropy : torch::autograd::Function<FusedHeadCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& weight, const torch::Tensor& targets) {
    const int64_t n = h.size(0), vocab = weight.size(0);
    torch::Tensor grad = torch::mm(h, weight.t());  // logits, turned into dL/dlogits below
    torch::Tensor target_logit = grad.gather(1, targets.unsqueeze(1)).squeeze(1);
    torch::Tensor log_normalizer = torch::empty({n}, grad.options());
    float* logits = grad.data_ptr<float>();
    float* normalizers = log_normalizer.data_ptr<float>();
    const float scale = float(1.0 / double(n));
    at::parallel_for(0, n, /*grain_size=*/16, [&](int64_t begin, int64_t end) {
      softmax_rows_in_place(logits + begin * vocab, end - begin, vocab, scale, normalizers + begin);
    });
    grad.scatter_add_(1, targets.unsqueeze(1), torch::full({n, 1}, -1.0 / double(n), grad.options()));
    ctx->save_for_backward({h, weight, grad});  // freed by autograd once backward has run
    return (log_normalizer - target_logit).mean();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor &h = saved[0], &weight = saved[1], &grad = saved[2];
    const torch::Tensor scale = grad_output[0];
    torch::Tensor dh, dweight;
    if (ctx->needs_input_grad(0)) dh = torch::mm(grad, weight).mul_(scale);
    if (ctx->needs_input_grad(1)) dweight = torch::mm(grad.t(), h).mul_(scale);
    return {dh, dweight, torch::Tensor()};
  }
};

// Both gradients are computed in the forward pass (the kernel needs each row's softmax
// once, while it is in L1); backward scales them.
struct SmallWidthHead : torch::autograd::Function<SmallWidthHead> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& weight, const torch::Tensor& targets) {
    const int64_t n = h.size(0), width = h.size(1), vocab = weight.size(0);
    const torch::Tensor weight_t = weight.t().contiguous();
    torch::Tensor loss = torch::empty({n}, h.options()), dh = torch::empty_like(h);
    // rows split over the intra-op threads, each summing its own dU: fixed for a thread count
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / 64));
    torch::Tensor partial = torch::zeros({chunks, vocab, width}, h.options());
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c) {
        const int64_t first = c * n / chunks, last = (c + 1) * n / chunks;
        head_rows({h.data_ptr<float>() + first * width, weight.data_ptr<float>(), weight_t.data_ptr<float>(),
                   targets.data_ptr<int64_t>() + first, last - first, width, vocab, float(1.0 / double(n)),
                   loss.data_ptr<float>() + first, dh.data_ptr<float>() + first * width,
                   partial[c].data_ptr<float>()});
      }
    });
    ctx->save_for_backward({dh, chunks == 1 ? partial[0] : partial.sum(0)});
    return loss.mean();
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    return {saved[0] * grad_output[0], saved[1] * grad_output[0], torch::Tensor()};
  }
};

// Off the CPU: the logits of a few thousand rows at a time, never all N x V of them. Each
// chunk's gradient is taken in the forward pass (dL/dlogits = (softmax - onehot) / N, as
// above) and turned at once into its share of dL/dh and dL/dU, so what is kept for backward
// is dh [N, W] and dU [V_padded, W], not the fp32 log-probabilities [N, V] the plain
// composition saves (3.3 GB at 16 x 1024 tokens of GPT-2's vocabulary, and as much again
// in backward). Under autocast the matmuls run in bf16 and the softmax in fp32. Every
// matmul takes the weight itself, not a view of it, so autocast's cached bf16 copy serves
// (a view is cast anew each time); the padding columns' logits are set to -inf instead,
// which gives them zero probability and zero gradient. No host synchronisation.
struct ChunkedHeadCrossEntropy : torch::autograd::Function<ChunkedHeadCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& h,
                               const torch::Tensor& weight, const torch::Tensor& targets, int64_t vocab,
                               int64_t chunk_rows) {
    const int64_t n = h.size(0), padded = weight.size(0);
    torch::Tensor dh = torch::empty_like(h), dweight;
    torch::Tensor loss = torch::zeros({}, h.options().dtype(torch::kFloat32));
    for (int64_t first = 0; first < n; first += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, n - first);
      const torch::Tensor hc = h.narrow(0, first, rows), tc = targets.narrow(0, first, rows).unsqueeze(1);
      torch::Tensor logits = torch::nn::functional::linear(hc, weight);  // every row: whole tiles
      if (padded > vocab) logits.narrow(1, vocab, padded - vocab).fill_(-std::numeric_limits<float>::infinity());
      // Few passes over the chunk's [rows, V], whose memory traffic is what costs at
      // GPT-2's vocabulary: log_softmax in fp32, exp in place into the probabilities, the
      // cast to the matmuls' dtype. 1/N scales the [rows, W] and [V, W] products, in fp32,
      // instead of the [rows, V] gradient. With a dtype, ATen's log_softmax converts as it
      // reads only Half on CUDA: bf16 logits are first copied into fp32 (one more pass, and
      // the copy's bytes while it runs: memory_plan.cpp counts them). Autocast leaves a call
      // that names its dtype alone.
      torch::Tensor g = torch::log_softmax(logits, 1, torch::kFloat32);
      loss.sub_(g.gather(1, tc).sum());
      g.exp_().scatter_add_(1, tc, torch::full({rows, 1}, -1.0, g.options()));
      const torch::Tensor gc = g.to(logits.scalar_type());
      dh.narrow(0, first, rows).copy_(torch::mm(gc, weight)).mul_(1.0 / double(n));
      torch::Tensor part = torch::mm(gc.t(), hc);
      if (!dweight.defined()) dweight = part.to(torch::kFloat32);
      else dweight.add_(part);
    }
    dweight.mul_(1.0 / double(n));
    ctx->save_for_backward({dh, dweight.to(weight.scalar_type())});
    return loss.div_(double(n));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_output) {
    const auto saved = ctx->get_saved_variables();
    return {saved[0] * grad_output[0], saved[1] * grad_output[0], torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor head_cross_entropy_unfused(const torch::Tensor& h, const torch::Tensor& weight,
                                         const torch::Tensor& targets, int64_t vocab) {
  torch::Tensor logits = torch::matmul(h, weight.t());
  if (vocab > 0 && vocab < logits.size(-1)) logits = logits.narrow(-1, 0, vocab);
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), targets);
}

torch::Tensor head_cross_entropy_chunked(const torch::Tensor& h, const torch::Tensor& weight,
                                         const torch::Tensor& targets, int64_t vocab, int64_t chunk_rows) {
  if (vocab <= 0) vocab = weight.size(0);
  if (chunk_rows <= 0) chunk_rows = head_chunk_rows(vocab);
  return ChunkedHeadCrossEntropy::apply(h, weight, targets, vocab, chunk_rows);
}

torch::Tensor head_cross_entropy_eval_chunked(const torch::Tensor& h, const torch::Tensor& weight,
                                              const torch::Tensor& targets, int64_t vocab, int64_t chunk_rows) {
  if (vocab <= 0) vocab = weight.size(0);
  if (chunk_rows <= 0) chunk_rows = head_chunk_rows(vocab);
  const int64_t n = h.size(0);
  torch::Tensor sum = torch::zeros({}, h.options().dtype(torch::kFloat32));
  for (int64_t first = 0; first < n; first += chunk_rows) {
    const int64_t rows = std::min(chunk_rows, n - first);
    torch::Tensor logits = torch::matmul(h.narrow(0, first, rows), weight.t());
    if (vocab < logits.size(-1)) logits = logits.narrow(-1, 0, vocab);
    const torch::Tensor logp = torch::log_softmax(logits.to(torch::kFloat32), -1);
    sum -= logp.gather(1, targets.narrow(0, first, rows).unsqueeze(1)).sum();
  }
  return sum / double(n);
}

torch::Tensor head_cross_entropy(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets,
                                 bool small_width, int64_t vocab) {
  if (vocab > 0 && vocab < weight.size(0) && h.device().is_cpu())
    return head_cross_entropy(h, weight.narrow(0, 0, vocab), targets, small_width);
  const bool wants_grad = torch::GradMode::is_enabled() && (h.requires_grad() || weight.requires_grad());
  if (!h.device().is_cpu()) {
    return wants_grad ? head_cross_entropy_chunked(h, weight, targets, vocab)
                      : head_cross_entropy_eval_chunked(h, weight, targets, vocab);
  }
  const bool fusable = wants_grad && h.device().is_cpu() && h.scalar_type() == torch::kFloat32 &&
                       weight.scalar_type() == torch::kFloat32 && !compat::cpu_autocast_enabled();
  if (!fusable) return head_cross_entropy_unfused(h, weight, targets, vocab);
  if (small_width && head_rows_supported(h.size(1)))
    return SmallWidthHead::apply(h.contiguous(), weight.contiguous(), targets.contiguous());
  return FusedHeadCrossEntropy::apply(h.contiguous(), weight, targets.contiguous());
}

}  // namespace shapelaw
