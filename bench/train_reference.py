#!/usr/bin/env python3
"""PyTorch reference of shapelaw's `train` step, for bench/train.sh.

The same model as lib/model/model.cpp (pre-norm blocks, RoPE causal attention with the
1.13 textbook attention, gelu|swiglu MLP, layernorm|rmsnorm, untied head, final norm),
the same AdamW parameter groups (matrices decayed, vectors not), the same per-step LR
set on every group, gradient accumulation, global-norm clipping and zero_grad. Data are
random tokens generated up front (the C++ side reads shards through a prefetch thread),
so neither side's step time contains data loading.

Prints one JSON object: tokens/s over the timed steps, MFU against --peak (or a matmul
peak measured here), and the mean forward/backward/optimizer time per step (host time:
exact on CPU; on CUDA only the step time is synchronized). --device cuda --bf16 mirrors
`train --device cuda` (bf16 autocast of the forward, fp32 weights and AdamW).
"""
import argparse
import contextlib
import json
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Norm(nn.Module):
    def __init__(self, width, rms, eps=1e-5):
        super().__init__()
        self.rms, self.eps = rms, eps
        self.gain = nn.Parameter(torch.ones(width))
        self.shift = None if rms else nn.Parameter(torch.zeros(width))

    def forward(self, x):
        if not self.rms:
            return F.layer_norm(x, (x.size(-1),), self.gain, self.shift, self.eps)
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.gain).to(x.dtype)


def rope_tables(seq, d, theta=10000.0):
    i = torch.arange(0, d // 2, dtype=torch.float64)
    inv_freq = torch.pow(theta, -2.0 * i / d)
    angles = torch.outer(torch.arange(0, seq, dtype=torch.float64), inv_freq)
    return angles.cos().float(), angles.sin().float()


def apply_rope(x, cos, sin):
    half, t = x.size(-1) // 2, x.size(-2)
    c, s = cos[:t], sin[:t]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).to(x.dtype)


def causal_attention(q, k, v):
    # as compat::causal_attention: the fused kernel on CUDA (torch >= 2.0), else the textbook form
    if q.is_cuda and hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.size(-2)
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
    future = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    scores = scores.masked_fill(future, float("-inf"))
    return torch.matmul(torch.softmax(scores, -1), v)


class Attention(nn.Module):
    def __init__(self, width, head_dim, bias):
        super().__init__()
        self.heads, self.head_dim = width // head_dim, head_dim
        self.qkv = nn.Linear(width, 3 * width, bias=bias)
        self.proj = nn.Linear(width, width, bias=bias)

    def forward(self, x, cos, sin):
        b, t, w = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = apply_rope(qkv[0], cos, sin), apply_rope(qkv[1], cos, sin)
        y = causal_attention(q, k, qkv[2])
        return self.proj(y.transpose(1, 2).reshape(b, t, w))


class Mlp(nn.Module):
    def __init__(self, width, hidden, swiglu, bias):
        super().__init__()
        self.swiglu = swiglu
        self.fc = nn.Linear(width, hidden, bias=bias)
        self.gate = nn.Linear(width, hidden, bias=bias) if swiglu else None
        self.proj = nn.Linear(hidden, width, bias=bias)

    def forward(self, x):
        if self.swiglu:
            return self.proj(F.silu(self.gate(x)) * self.fc(x))
        return self.proj(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        rms = a.norm == "rmsnorm"
        self.norm1, self.norm2 = Norm(a.width, rms), Norm(a.width, rms)
        self.attn = Attention(a.width, a.head_dim, a.bias)
        self.mlp = Mlp(a.width, mlp_hidden(a), a.mlp == "swiglu", a.bias)

    def forward(self, x, cos, sin):
        h = x + self.attn(self.norm1(x), cos, sin)
        return h + self.mlp(self.norm2(h))


class Transformer(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.embed = nn.Embedding(a.vocab_size, a.width)
        self.blocks = nn.ModuleList([Block(a) for _ in range(a.depth)])
        self.final_norm = Norm(a.width, a.norm == "rmsnorm")
        self.head = nn.Linear(a.width, a.vocab_size, bias=False)
        cos, sin = rope_tables(a.seq_len, a.head_dim)
        self.register_buffer("rope_cos", cos)
        self.register_buffer("rope_sin", sin)
        std, residual_std = 0.02, 0.02 / math.sqrt(2 * a.depth)
        for name, p in self.named_parameters():
            if name.endswith(".gain"):
                nn.init.ones_(p)
            elif name.endswith(".shift") or name.endswith(".bias"):
                nn.init.zeros_(p)
            elif name.endswith("proj.weight"):
                nn.init.normal_(p, 0.0, residual_std)
            else:
                nn.init.normal_(p, 0.0, std)

    def loss(self, tokens, targets):
        h = self.embed(tokens)
        for block in self.blocks:
            h = block(h, self.rope_cos, self.rope_sin)
        logits = self.head(self.final_norm(h))
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1))


def mlp_hidden(a):
    if a.mlp == "swiglu":
        return ((8 * a.width + 2) // 3 + 63) // 64 * 64
    return 4 * a.width


def flops_per_token(a, model):
    non_embedding = sum(p.numel() for n, p in model.named_parameters() if not n.startswith(("embed", "head")))
    return 6.0 * (non_embedding + a.vocab_size * a.width) + 12.0 * a.depth * a.width * a.seq_len


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_peak(device, bf16, seconds=0.3):
    n = 8192 if device.type == "cuda" else 1024
    g = torch.Generator().manual_seed(1234)
    dtype = torch.bfloat16 if bf16 else torch.float32
    a = torch.randn(n, n, generator=g).to(device, dtype)
    b = torch.randn(n, n, generator=g).to(device, dtype)
    torch.matmul(a, b)
    sync(device)
    iters, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or iters < 3:
        torch.matmul(a, b)
        iters += 1
        sync(device)
    return 2.0 * n ** 3 * iters / (time.perf_counter() - t0)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--vocab-size", type=int, default=50257)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--mlp", default="gelu")
    p.add_argument("--norm", default="layernorm")
    p.add_argument("--bias", action="store_true")
    p.add_argument("--micro-batch", type=int, default=8)
    p.add_argument("--batch-tokens", type=int, default=2048)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--skip", type=int, default=2, help="untimed first steps")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--peak", type=float, default=0.0, help="MFU denominator (0: measure)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--device", default="cpu")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast of the forward (cuda)")
    a = p.parse_args()

    if a.threads > 0:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device)
    peak = a.peak if a.peak > 0 else matmul_peak(device, a.bf16)
    torch.manual_seed(a.seed)
    # initialised where it runs (torch >= 2.0): at the paper's 1B row, 2.6e9 normals drawn on
    # the CPU and then copied over would spend a short GPU call's seconds on the host
    on_device = device if device.type == "cuda" and hasattr(device, "__enter__") else contextlib.nullcontext()
    with on_device:
        model = Transformer(a)
    model = model.to(device)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8)
    accum = a.batch_tokens // (a.seq_len * a.micro_batch)
    assert accum * a.seq_len * a.micro_batch == a.batch_tokens, "batch_tokens must be a multiple of seq x micro"
    data = torch.randint(1, a.vocab_size, (a.steps, accum, a.micro_batch, a.seq_len + 1)).to(device)
    fpt = flops_per_token(a, model)

    timed = {"step": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    losses, step_seconds = [], []
    for step in range(a.steps):
        t0 = time.perf_counter()
        lr = 3e-4 * min(1.0, (step + 1) / 2)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.zero_grad()
        fwd = bwd = 0.0
        loss_sum = torch.zeros((), device=device)
        for m in range(accum):
            w = data[step, m]
            tf = time.perf_counter()
            with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=a.bf16):
                loss = model.loss(w[:, :-1], w[:, 1:])
            tb = time.perf_counter()
            (loss / accum).backward()
            fwd += tb - tf
            bwd += time.perf_counter() - tb
            loss_sum += loss.detach().float()
        loss_sum = loss_sum.item()
        to = time.perf_counter()
        norm = torch.stack([p.grad.float().pow(2).sum() for p in model.parameters() if p.grad is not None]).sum().sqrt().item()
        if norm > 1.0:
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.mul_(1.0 / (norm + 1e-6))
        opt.step()
        sync(device)
        t1 = time.perf_counter()
        losses.append(loss_sum / accum)
        if step >= a.skip:
            step_seconds.append(t1 - t0)
            timed["step"] += t1 - t0
            timed["forward"] += fwd
            timed["backward"] += bwd
            timed["optimizer"] += t1 - to
    n = a.steps - a.skip
    tps = a.batch_tokens * n / timed["step"]
    print(json.dumps({
        "impl": "pytorch", "torch_version": torch.__version__, "threads": torch.get_num_threads(),
        "tokens_per_s": tps, "mfu": fpt * tps / peak, "peak_flops": peak, "flops_per_token": fpt,
        "step_ms": 1000 * timed["step"] / n, "min_step_ms": 1000 * min(step_seconds), "forward_ms": 1000 * timed["forward"] / n,
        "backward_ms": 1000 * timed["backward"] / n, "optimizer_ms": 1000 * timed["optimizer"] / n,
        "timed_steps": n, "first_loss": losses[0], "last_loss": losses[-1]}))


if __name__ == "__main__":
    main()
