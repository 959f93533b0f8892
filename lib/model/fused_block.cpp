#include "model/fused_block.h"

#include <array>
#include <iostream>
#include <mutex>

#include <ATen/Parallel.h>

#include "kernels/block_kernels.h"
#include "compat/torch_compat.h"

namespace shapelaw {
namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The block's tensors in a fixed order; absent ones (biases, layernorm shifts, the swiglu
// gate) are undefined and are not handed to autograd.
enum Slot { kX, kCos, kSin, kG1, kB1, kWqkv, kBqkv, kWo, kBo, kG2, kB2, kWfc, kBfc, kWgate, kBgate, kW2, kB2mlp, kSlots };

// What forward keeps for backward, in save_for_backward's order; undefined where the block
// has no such tensor (rmsnorm's means, gelu's gate). kSavedU is the MLP's pre-activation
// for swiglu and GELU'(pre-activation) for gelu (all that gelu's backward needs).
enum Saved {
  kSavedX, kSavedCos, kSavedSin,
  kSavedNorm1Out, kSavedNorm1Mean, kSavedNorm1Rstd,
  kSavedQkv, kSavedY, kSavedLse, kSavedH,
  kSavedNorm2Out, kSavedNorm2Mean, kSavedNorm2Rstd,
  kSavedU, kSavedGate, kSavedSiluGate, kSavedAct,
  kSavedWqkv, kSavedWo, kSavedWfc, kSavedWgate, kSavedW2,
  kSavedCount
};

std::array<Tensor, kSlots> block_slots(BlockImpl& b, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  auto& mlp = *b.mlp;
  auto bias = [](torch::nn::Linear& l) { return l ? l->bias : Tensor(); };
  return {x,
          cos,
          sin,
          b.norm1->gain,
          b.norm1->shift,
          b.attn->qkv->weight,
          bias(b.attn->qkv),
          b.attn->proj->weight,
          bias(b.attn->proj),
          b.norm2->gain,
          b.norm2->shift,
          mlp.fc->weight,
          bias(mlp.fc),
          mlp.gate ? mlp.gate->weight : Tensor(),
          mlp.gate ? bias(mlp.gate) : Tensor(),
          mlp.proj->weight,
          bias(mlp.proj)};
}

// A norm's forward on rows [M, W]: the output and what its backward needs.
struct NormPass {
  Tensor out, mean, rstd;  // mean undefined for rmsnorm
};

NormShape norm_shape(const NormImpl& n, const Tensor& x) { return {x.size(0), x.size(1), !n.rms, float(n.eps)}; }

NormPass run_norm(const NormImpl& n, const Tensor& x) {
  NormPass p{torch::empty_like(x), n.rms ? Tensor() : torch::empty({x.size(0)}, x.options()),
             torch::empty({x.size(0)}, x.options())};
  norm_forward(norm_shape(n, x), x.data_ptr<float>(), n.gain.data_ptr<float>(),
               n.rms ? nullptr : n.shift.data_ptr<float>(), p.out.data_ptr<float>(),
               n.rms ? nullptr : p.mean.data_ptr<float>(), p.rstd.data_ptr<float>());
  return p;
}

// base + dx of a norm from dout, dgain, dshift (undefined for rmsnorm).
std::array<Tensor, 3> run_norm_backward(const NormImpl& n, const Tensor& dout, const Tensor& x, const NormPass& p,
                                        const Tensor& base) {
  std::array<Tensor, 3> g{torch::empty_like(x), torch::empty_like(n.gain),
                          n.rms ? Tensor() : torch::empty_like(n.gain)};
  norm_backward(norm_shape(n, x), x.data_ptr<float>(), n.gain.data_ptr<float>(),
                n.rms ? nullptr : p.mean.data_ptr<float>(), p.rstd.data_ptr<float>(), dout.data_ptr<float>(),
                base.data_ptr<float>(), g[0].data_ptr<float>(), g[1].data_ptr<float>(),
                n.rms ? nullptr : g[2].data_ptr<float>());
  return g;
}

// The block's products on the kernel layer's GEMM where the shapes fit (gemm_fits: rows
// a multiple of 4, output columns of 16, for every instruction set), on ATen's otherwise. All operands contiguous, rows first; b's
// rows are as long as c's.
Gemm gemm_of(const Tensor& a, int64_t a_row, int64_t a_col, const Tensor& b, const Tensor& c, int64_t K) {
  return {c.size(0), c.size(1), K, a.data_ptr<float>(), a_row, a_col, b.data_ptr<float>(), c.size(1),
          c.data_ptr<float>(), c.size(1), 1.0f, nullptr, nullptr};
}

// g over the intra-op threads, split by rows of C (tiles of 4; each row's sum is one
// thread's, so the result does not depend on the thread count).
void parallel_gemm(const Gemm& g) {
  at::parallel_for(0, g.M / kGemmRows, /*grain_size=*/32, [&](int64_t begin, int64_t end) {
    Gemm part = g;
    part.M = (end - begin) * kGemmRows;
    part.A += begin * kGemmRows * g.a_row;
    part.C += begin * kGemmRows * g.c_row;
    if (part.base) part.base += begin * kGemmRows * g.c_row;
    gemm(part);
  });
}

// base + alpha (x W^T + b); base and b may be undefined.
Tensor project(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& base = {}, double alpha = 1.0) {
  const int64_t M = x.size(0), N = w.size(0), K = w.size(1);
  if (!gemm_fits(M, N)) {
    if (!base.defined()) return b.defined() ? at::addmm(b, x, w.t()) : at::mm(x, w.t());
    return at::addmm(b.defined() ? base + alpha * b : base, x, w.t(), 1.0, alpha);
  }
  Tensor out = torch::empty({M, N}, x.options()), w_t = w.t().contiguous();
  Gemm g = gemm_of(x, K, 1, w_t, out, K);
  g.alpha = float(alpha), g.base = base.defined() ? base.data_ptr<float>() : nullptr;
  g.bias = b.defined() ? b.data_ptr<float>() : nullptr;
  parallel_gemm(g);
  return out;
}

// dy [M, N] times w [N, K]
Tensor times(const Tensor& dy, const Tensor& w) {
  if (!gemm_fits(dy.size(0), w.size(1))) return at::mm(dy, w);
  Tensor out = torch::empty({dy.size(0), w.size(1)}, dy.options());
  parallel_gemm(gemm_of(dy, dy.size(1), 1, w, out, w.size(0)));
  return out;
}

// scale dy^T x: dy [M, N], x [M, K]
Tensor transposed_times(const Tensor& dy, const Tensor& x, double scale) {
  if (!gemm_fits(dy.size(1), x.size(1))) return scale == 1.0 ? at::mm(dy.t(), x) : at::mm(dy.t(), x).mul_(scale);
  Tensor out = torch::empty({dy.size(1), x.size(1)}, dy.options());
  Gemm g = gemm_of(dy, 1, dy.size(1), x, out, dy.size(0));
  g.alpha = float(scale);
  parallel_gemm(g);
  return out;
}

// The gradients of a linear layer y = x W^T + b given dy (times `scale`): dW, db; dx if wanted.
struct LinearGrads {
  Tensor dw, db, dx;
};
LinearGrads linear_backward(const Tensor& dy, double scale, const Tensor& x, const Tensor& w, bool has_bias,
                            bool want_dx) {
  LinearGrads g;
  g.dw = transposed_times(dy, x, scale);
  if (has_bias) g.db = scale == 1.0 ? dy.sum(0) : dy.sum(0).mul_(scale);
  if (want_dx) g.dx = times(dy, w);
  return g;
}

AttentionShape attention_shape(const AttentionImpl& a, int64_t T) {
  return {T, a.heads, a.head_dim, float(a.scale)};
}

// Sequences in chunks over the intra-op threads: attention is independent per sequence.
template <class F>
void for_sequences(int64_t B, F&& f) {
  at::parallel_for(0, B, /*grain_size=*/1, [&](int64_t begin, int64_t end) { f(begin, end - begin); });
}

struct FusedBlock : torch::autograd::Function<FusedBlock> {
  // present: bit i set when slot i is among `inputs`
  static Tensor forward(AutogradContext* ctx, BlockImpl* block, int64_t present, at::TensorList inputs) {
    std::array<Tensor, kSlots> in;
    for (int i = 0, next = 0; i < kSlots; ++i)
      if (present >> i & 1) in[i] = inputs[next++];
    const Tensor& x3 = in[kX];
    const int64_t B = x3.size(0), T = x3.size(1), W = x3.size(2);
    const double r = block->residual_mult;
    const Tensor x = x3.reshape({B * T, W});
    const Tensor cos = in[kCos].contiguous(), sin = in[kSin].contiguous();

    NormPass n1 = run_norm(*block->norm1, x);
    Tensor qkv = project(n1.out, in[kWqkv], in[kBqkv]);
    Tensor y = torch::empty({B * T, W}, x.options());
    Tensor lse = torch::empty({B, block->attn->heads, T}, x.options());
    const AttentionShape shape = attention_shape(*block->attn, T);
    for_sequences(B, [&](int64_t b, int64_t n) {
      attention_forward(shape, n, qkv.data_ptr<float>() + b * T * 3 * W, cos.data_ptr<float>(), sin.data_ptr<float>(),
                        y.data_ptr<float>() + b * T * W, lse.data_ptr<float>() + b * shape.H * T);
    });
    Tensor h = project(y, in[kWo], in[kBo], x, r);

    NormPass n2 = run_norm(*block->norm2, h);
    Tensor u = project(n2.out, in[kWfc], in[kBfc]), g, silu_g, act;
    if (block->mlp->swiglu) {
      g = project(n2.out, in[kWgate], in[kBgate]);
      silu_g = at::silu(g);
      act = silu_g * u;
    } else {
      // u is needed in backward only through GELU'(u): keep that instead
      act = torch::empty_like(u);
      Tensor slope = torch::empty_like(u);
      gelu_forward(u.numel(), u.data_ptr<float>(), act.data_ptr<float>(), slope.data_ptr<float>());
      u = slope;
    }
    Tensor out = project(act, in[kW2], in[kB2mlp], h, r);

    ctx->saved_data["block"] = reinterpret_cast<int64_t>(block);
    ctx->saved_data["present"] = present;
    std::vector<Tensor> saved(kSavedCount);
    saved[kSavedX] = x, saved[kSavedCos] = cos, saved[kSavedSin] = sin;
    saved[kSavedNorm1Out] = n1.out, saved[kSavedNorm1Mean] = n1.mean, saved[kSavedNorm1Rstd] = n1.rstd;
    saved[kSavedQkv] = qkv, saved[kSavedY] = y, saved[kSavedLse] = lse, saved[kSavedH] = h;
    saved[kSavedNorm2Out] = n2.out, saved[kSavedNorm2Mean] = n2.mean, saved[kSavedNorm2Rstd] = n2.rstd;
    saved[kSavedU] = u, saved[kSavedGate] = g, saved[kSavedSiluGate] = silu_g, saved[kSavedAct] = act;
    saved[kSavedWqkv] = in[kWqkv], saved[kSavedWo] = in[kWo], saved[kSavedWfc] = in[kWfc];
    saved[kSavedWgate] = in[kWgate], saved[kSavedW2] = in[kW2];
    ctx->save_for_backward(saved);
    return out.view({B, T, W});
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto* block = reinterpret_cast<BlockImpl*>(ctx->saved_data["block"].toInt());
    const auto s = ctx->get_saved_variables();
    const Tensor &x = s[kSavedX], &cos = s[kSavedCos], &sin = s[kSavedSin], &qkv = s[kSavedQkv], &y = s[kSavedY],
                 &lse = s[kSavedLse], &h = s[kSavedH], &u = s[kSavedU], &g = s[kSavedGate],
                 &silu_g = s[kSavedSiluGate], &act = s[kSavedAct], &w_qkv = s[kSavedWqkv], &w_o = s[kSavedWo],
                 &w_fc = s[kSavedWfc], &w_gate = s[kSavedWgate], &w2 = s[kSavedW2];
    const NormPass n1{s[kSavedNorm1Out], s[kSavedNorm1Mean], s[kSavedNorm1Rstd]},
        n2{s[kSavedNorm2Out], s[kSavedNorm2Mean], s[kSavedNorm2Rstd]};
    const int64_t B = grad_output[0].size(0), T = grad_output[0].size(1), W = grad_output[0].size(2);
    const double r = block->residual_mult;
    const bool bias = block->attn->qkv->bias.defined();
    const Tensor dout = grad_output[0].reshape({B * T, W}).contiguous();
    std::array<Tensor, kSlots> grad;

    // MLP branch: out = h + r (act W2^T + b2)
    LinearGrads l2 = linear_backward(dout, r, act, w2, bias, true);
    grad[kW2] = l2.dw, grad[kB2mlp] = l2.db;
    Tensor du, dg;
    if (block->mlp->swiglu) {
      Tensor dact = r == 1.0 ? l2.dx : l2.dx.mul_(r);
      du = dact * silu_g;
      dg = at::silu_backward(dact * u, g);
    } else {
      du = r == 1.0 ? l2.dx.mul_(u) : l2.dx.mul_(u).mul_(r);  // u: GELU'(u), saved by forward
    }
    LinearGrads lfc = linear_backward(du, 1.0, n2.out, w_fc, bias, true);
    grad[kWfc] = lfc.dw, grad[kBfc] = lfc.db;
    Tensor dn2 = lfc.dx;
    if (dg.defined()) {
      LinearGrads lg = linear_backward(dg, 1.0, n2.out, w_gate, bias, false);
      grad[kWgate] = lg.dw, grad[kBgate] = lg.db;
      dn2.add_(times(dg, w_gate));
    }
    auto [dh, dg2, db2] = run_norm_backward(*block->norm2, dn2, h, n2, dout);
    grad[kG2] = dg2, grad[kB2] = db2;

    // attention branch: h = x + r (y Wo^T + bo)
    LinearGrads lo = linear_backward(dh, r, y, w_o, bias, true);
    grad[kWo] = lo.dw, grad[kBo] = lo.db;
    Tensor dqkv = torch::empty_like(qkv);
    const AttentionShape shape = attention_shape(*block->attn, T);
    const float* dy = lo.dx.data_ptr<float>();
    for_sequences(B, [&](int64_t b, int64_t n) {
      attention_backward(shape, n, qkv.data_ptr<float>() + b * T * 3 * W, cos.data_ptr<float>(), sin.data_ptr<float>(),
                         y.data_ptr<float>() + b * T * W, lse.data_ptr<float>() + b * shape.H * T, dy + b * T * W,
                         float(r), dqkv.data_ptr<float>() + b * T * 3 * W);
    });
    LinearGrads lqkv = linear_backward(dqkv, 1.0, n1.out, w_qkv, bias, true);
    grad[kWqkv] = lqkv.dw, grad[kBqkv] = lqkv.db;
    auto [dx, dg1, db1] = run_norm_backward(*block->norm1, lqkv.dx, x, n1, dh);
    grad[kG1] = dg1, grad[kB1] = db1;
    grad[kX] = dx.view({B, T, W});

    const int64_t present = ctx->saved_data["present"].toInt();
    variable_list result{Tensor(), Tensor()};  // block, present
    for (int i = 0; i < kSlots; ++i)
      if (present >> i & 1) result.push_back(grad[i]);
    return result;
  }
};

}  // namespace

bool fused_block_applies(const torch::Tensor& x) {
  const bool applies = x.device().is_cpu() && x.scalar_type() == torch::kFloat32 && !compat::cpu_autocast_enabled();
  if (!applies) {
    static std::once_flag said;
    std::call_once(said, [&] {
      std::cerr << "--block-impl fused: CPU float32 only, running the aten block (" << x.device() << ", "
                << x.scalar_type() << ")\n";
    });
  }
  return applies;
}

torch::Tensor fused_block(BlockImpl& block, const torch::Tensor& x, const torch::Tensor& cos,
                          const torch::Tensor& sin) {
  const auto slots = block_slots(block, x.contiguous(), cos, sin);
  std::vector<Tensor> inputs;
  int64_t present = 0;
  for (int i = 0; i < kSlots; ++i)
    if (slots[i].defined()) inputs.push_back(slots[i]), present |= int64_t(1) << i;
  return FusedBlock::apply(&block, present, at::TensorList(inputs));
}

}  // namespace shapelaw
