#!/usr/bin/env python3
"""The checks of scripts/gpu-check.sh: reads train's outputs and prints one line per check,
    gpu-check: PASS <check>: <value> within <tolerance>
(or FAIL), exiting 1 on a FAIL; `info` lines state measurements that have no tolerance.
Usage: gpu_check.py <subcommand> ...   (see each function; gpu-check.sh is the only caller)
"""
import csv
import json
import math
import re
import sys

# Dense bf16 tensor-core peak of the specification sheet, by the name torch reports.
SPEC_BF16_PEAK = [("H200", 989e12), ("H100", 989e12), ("A100", 312e12), ("L40S", 362e12), ("A10G", 70e12)]


def say(line):
    print(f"gpu-check: {line}", flush=True)


def verdict(check, value, tolerance, ok):
    say(f"{'PASS' if ok else 'FAIL'} {check}: {value} within {tolerance}")
    return 0 if ok else 1


def train_losses(run):
    rows = [json.loads(l) for l in open(run + "/metrics.jsonl") if l.strip()]
    return {r["step"]: r["loss"] for r in rows if r.get("kind") == "train"}


def max_loss_difference(a, b, first, last=None):
    """(max |dloss|, the steps compared, where it peaks): None, steps when steps are missing"""
    la, lb = train_losses(a), train_losses(b)
    steps = [s for s in sorted(la) if s >= first and (last is None or s <= last)]
    if not steps or any(s not in lb for s in steps):
        return None, steps, ""
    if not all(math.isfinite(la[s]) and math.isfinite(lb[s]) for s in steps):
        return math.inf, steps, ""
    diff = max(abs(la[s] - lb[s]) for s in steps)
    # the step of the largest difference and the first step's: a drift that grows from the
    # last bits of the first steps reads differently from an offset present at once (an
    # exact match needs no place)
    worst = max(steps, key=lambda s: abs(la[s] - lb[s]))
    at = f" at step {worst} (step {steps[0]}: {abs(la[steps[0]] - lb[steps[0]]):.3g})" if diff > 0 else ""
    return diff, steps, at


def losses(check, a, b, first, tol, last=None):
    """max |loss a - loss b| over the train steps first..last (default: all from first), at most tol"""
    diff, steps, at = max_loss_difference(a, b, int(first), None if last is None else int(last))
    if diff is None:
        return verdict(check, f"steps missing (a {sorted(train_losses(a))}, b {sorted(train_losses(b))})", tol, False)
    return verdict(f"{check}, steps {steps[0]}-{steps[-1]}", f"max |dloss| {diff:.3g}{at}", f"{float(tol):.3g}",
                   diff <= float(tol))


def drift(check, a, b):
    """the difference over every step, stated without a tolerance: two computations that
    round differently part further with every step once the run is sensitive (measured)"""
    diff, steps, at = max_loss_difference(a, b, 1)
    if diff is None or not math.isfinite(diff):
        say(f"info {check}: no comparable steps")
        return 0
    say(f"info {check}, steps {steps[0]}-{steps[-1]}: max |dloss| {diff:.3g}{at} "
        "(drift, no tolerance)")
    return 0


def sensitivity(check, a, broken, first, tol, ratio):
    """a planted fault must move the losses by at least ratio x tol: the tolerance can see it"""
    diff, steps, _ = max_loss_difference(a, broken, int(first))
    if diff is None:
        return verdict(check, "steps missing", tol, False)
    got = diff / float(tol)
    return verdict(f"{check}, steps {steps[0]}-{steps[-1]}",
                   f"max |dloss| {diff:.3g} = {got:.3g} x the tolerance {float(tol):.3g}",
                   f">= {float(ratio):g} x", got >= float(ratio))


def read_norms(path):
    """grad_norms.csv (step,layer,component,norm) or grad_profile.csv (layer,component,norm,...)"""
    lines = [l.strip().split(",") for l in open(path) if l.strip()]
    head, rows = lines[0], lines[1:]
    col = {name: i for i, name in enumerate(head)}
    key = (lambda r: (r[col["step"]], r[col["layer"]], r[col["component"]])) if "step" in col else \
          (lambda r: (r[col["layer"]], r[col["component"]]))
    return {key(r): float(r[col["norm"]]) for r in rows}


def norms(check, a, b, rel):
    """every per-layer gradient norm of b within rel (relative) of a's"""
    na, nb = read_norms(a), read_norms(b)
    if not na or set(na) != set(nb):
        return verdict(check, f"different rows ({len(na)} vs {len(nb)})", rel, False)
    key = max(na, key=lambda k: abs(na[k] - nb[k]) / max(abs(na[k]), 1e-30))
    worst = abs(na[key] - nb[key]) / max(abs(na[key]), 1e-30)
    return verdict(f"{check} ({len(na)} norms)",
                   f"max relative difference {worst:.3g} at {'/'.join(key)} ({na[key]:.6g} vs {nb[key]:.6g})",
                   f"{float(rel):.3g}", worst <= float(rel))


def evaluation(check, record, summary, tol):
    """train eval's loss against the summary's validation loss of the same precision"""
    e, s = json.load(open(record)), json.load(open(summary))
    precision = e.get("precision", "fp32")
    key = "final_val_loss" if s.get("val_precision", s["precision"]) == precision else "final_val_loss_" + precision
    if key not in s or s[key] is None or e.get("loss") is None:
        return verdict(check, f"no {precision} validation loss in the summary (keys {sorted(s)})", tol, False)
    diff = abs(e["loss"] - s[key])
    if key != "final_val_loss":
        say(f"info {check}: summary's {s['precision']} validation loss {s['final_val_loss']:.5f}, "
            f"its {precision} one {s[key]:.5f}, train eval ({precision}) {e['loss']:.5f}")
    return verdict(f"{check} ({precision}, {e['target_tokens']} tokens)", f"|eval - summary {key}| {diff:.3g}",
                   f"{float(tol):.3g}", diff <= float(tol))


def memory(check, summary, plan_json, rel):
    """the plan's allocated peak within rel of the measured one; on CUDA the plan's
    required bytes cover the allocator's reserved peak"""
    m = json.load(open(summary))["memory"]
    p = json.load(open(plan_json))["bytes_per_rank"]
    meas = m["measured"]
    ratio = p["peak"] / max(meas["peak"], 1)
    reserved = meas.get("peak_reserved", -1)
    say(f"info {check}: plan peak {p['peak'] / 1e9:.4f} GB (activations {p['activations']['used'] / 1e9:.4f}), "
        f"measured allocated peak {meas['peak'] / 1e9:.4f} GB (activations {meas['activations'] / 1e9:.4f}), "
        + (f"reserved peak {reserved / 1e9:.4f} GB" if reserved >= 0 else "reserved: none on CPU (tensors counted)"))
    failed = verdict(f"{check}: plan peak / measured allocated peak", f"{ratio:.3f}",
                     f"1 +- {float(rel):g}", abs(ratio - 1) <= float(rel))
    if "evaluation_peak" in p and meas.get("evaluation_peak", 0) > 0:  # validation's own peak (older summaries lack it)
        ev = p["evaluation_peak"] / meas["evaluation_peak"]
        failed |= verdict(f"{check}: plan evaluation peak / measured", f"{ev:.3f}",
                          f"1 +- {float(rel):g}", abs(ev - 1) <= float(rel))
    if reserved >= 0:
        required = m["plan"].get("required", p.get("required", 0))
        failed |= verdict(f"{check}: measured reserved peak / plan required", f"{reserved / max(required, 1):.3f}",
                          "<= 1", reserved <= required)
    return failed


def spec_peak(gpu):
    return next((peak for name, peak in SPEC_BF16_PEAK if name in gpu), None)


def throughput(name, run, gpu, reference=None, target=None):
    """tokens/s and MFU of train (steps after the first two), against the specification's
    peak where known and the matmul peak train measured; the reference's beside it; a
    target MFU (percent of the specification's peak) said met or not, as information: a
    slow run is not a wrong one"""
    s = json.load(open(run + "/summary.json"))
    # the profiled steps (the profiler's own cost, its waits) stay out of the rate
    profiled = s["config"].get("profile_steps") or [math.inf]
    rows = [r for r in (json.loads(l) for l in open(run + "/metrics.jsonl") if '"train"' in l)][2:]
    rows = [r for r in rows if r["step"] < profiled[0]]
    tps = sum(r["tokens_per_s"] for r in rows) / len(rows)
    spec = spec_peak(gpu) if s["precision"] == "bf16" else None
    fpt = s["flops_per_token"]
    line = (f"info {name:<5} train     {tps:12.0f} tok/s  MFU {100 * fpt * tps / s['peak_flops']:5.1f}% of the measured "
            f"{s['precision']} matmul peak {s['peak_flops'] / 1e12:.1f} TFLOP/s")
    if spec:
        line += f", {100 * fpt * tps / spec:5.1f}% of the specification's {spec / 1e12:.0f} TFLOP/s ({gpu})"
    say(line + f"; attention: {s.get('attention_backend', '?')}")
    if target and spec:
        mfu = 100 * fpt * tps / spec
        say(f"info {name:<5} target: {float(target):g}% MFU of the specification's peak: "
            f"{'met' if mfu >= float(target) else 'NOT met'} ({mfu:.1f}%)")
    if reference:
        r = json.load(open(reference))
        line = f"info {name:<5} pytorch   {r['tokens_per_s']:12.0f} tok/s  MFU {100 * fpt * r['tokens_per_s'] / s['peak_flops']:5.1f}% measured"
        if spec:
            line += f", {100 * fpt * r['tokens_per_s'] / spec:5.1f}% spec"
        say(line + f"; train / pytorch {tps / r['tokens_per_s']:.2f}x")
    return 0


# kinds of GPU kernels by name (cuBLAS/CUTLASS, SDPA's backends, NCCL, fused optimizers), the
# first match wins: attention before matmul, since SDPA's flash, memory-efficient and cuDNN
# kernels carry CUTLASS types and sm<arch> in their names too (cutlass::bfloat16_t,
# fmha_cutlassF_..._sm80, ..._sdpa_sm90_flash_...)
KERNEL_KINDS = [("attention", r"flash|fmha|attention|sdpa|cudnn"), ("matmul", r"gemm|cutlass|xmma|cublas|nvjet|sm\d+_"),
                ("softmax and loss", r"softmax|nll|cross_entropy"), ("optimizer", r"adam|foreach|multi_tensor"),
                ("collectives", r"nccl"), ("copies", r"memcpy|memset|copy")]


def kernel_kind(name):
    return next((kind for kind, pattern in KERNEL_KINDS if re.search(pattern, name, re.I)), "other element-wise and reductions")


def kind(*names):
    """each kernel name's kind, one per line (what `profile` sums by)"""
    for n in names:
        print(f"{kernel_kind(n)}\t{n}")
    return 0


def profile(name, run, top=12):
    """where the profiled steps' time went (train --profile-steps, profile.csv): on a GPU its
    kernels by kind and the largest ones; on the CPU its operators (inclusive times: an
    operator's share counts the operators it calls too)"""
    rows = list(csv.DictReader(open(run + "/profile.csv")))
    device = "cuda" if any(r["device"] == "cuda" for r in rows) else "cpu"
    rows = [r for r in rows if r["device"] == device]
    total = sum(float(r["total_us"]) for r in rows)
    steps = json.load(open(run + "/summary.json"))["config"]["profile_steps"]
    line = f"info {name:<5} profile of steps {steps[0]}-{steps[-1]} on {device}: {total / 1e3:.1f} ms in {len(rows)} "
    if device == "cuda":
        kinds = {}
        for r in rows:
            kinds[kernel_kind(r["name"])] = kinds.get(kernel_kind(r["name"]), 0) + float(r["total_us"])
        say(line + "kernels; " + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])))
    else:
        say(line + "operators (inclusive times)")
    for r in rows[:int(top)]:
        say(f"info {name:<5} profile {100 * float(r['share']):5.1f}% {int(r['calls']):6d}x  {r['name'][:110]}")
    return 0


def summary(check, run, precision, device):
    """a run's summary: its precision and device, finite losses; its attention backend said"""
    s = json.load(open(run + "/summary.json"))
    ok = (s["precision"] == precision and s["device"].startswith(device)
          and all(isinstance(s.get(k), float) and math.isfinite(s[k]) for k in ("final_train_loss", "final_val_loss")))
    say(f"info {check}: attention {s.get('attention_backend', '?')}, head dim {s['head_dim']}")
    return verdict(check, f"{s['precision']} on {s['device']}, train loss {s['final_train_loss']:.4f}, "
                   f"val {s['final_val_loss'] if s['final_val_loss'] is None else round(s['final_val_loss'], 4)}",
                   f"{precision} on {device}, finite", ok)


if __name__ == "__main__":
    commands = {f.__name__: f for f in (losses, drift, sensitivity, norms, evaluation, memory, throughput, profile, kind, summary)}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    try:
        sys.exit(commands[sys.argv[1]](*sys.argv[2:]))
    except (OSError, KeyError, ValueError, IndexError, ZeroDivisionError) as e:
        say(f"FAIL {sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]}: unreadable outputs ({type(e).__name__}: {e}) "
            "within a finished run")
        sys.exit(1)
