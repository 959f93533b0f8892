#!/usr/bin/env python3
"""CPU milliseconds per step of `train` and of the tuned PyTorch reference at one
thread, for a machine too busy for wall-clock rates (docs/benchmarks.md, the micro-study's
shapes): CPU time of an N2-step run minus that of an N1-step run, over N2 - N1, so
start-up (the import of torch, reading shards) cancels; being descheduled costs no CPU
time; the least CPU time of each run length over the repeats is taken. Usage:
  train --make-synthetic-shards S --synthetic-tokens 3000000 --vocab-size 2048
  bench/train_cpu.py --bin build/bin --data S --width 16 [--n1 5 --n2 25 --reps 3]
                     [--block-impl aten,fused]   (each train --block-impl, same run)
"""
import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import tempfile

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--bin", default="build/bin")
p.add_argument("--data", required=True, help="shards with vocabulary 2048")
p.add_argument("--width", type=int, default=16)
p.add_argument("--depth", type=int, default=16)
p.add_argument("--n1", type=int, default=5)
p.add_argument("--n2", type=int, default=25)
p.add_argument("--reps", type=int, default=3)
p.add_argument("--python", default="/usr/bin/python3")
p.add_argument("--block-impl", default="aten", help="train --block-impl values, comma-separated")
a = p.parse_args()
core = subprocess.run([f"{a.bin}/train", "--version"], capture_output=True, text=True).stdout
core = re.search(r"^BLAS: OpenBLAS ([A-Za-z0-9]+)", core, re.M)  # as bench/train.sh reads it
core = core.group(1) if core else ""
tuned = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", MALLOC_MMAP_MAX_="0",
             MALLOC_TRIM_THRESHOLD_="1073741824", **({"OPENBLAS_CORETYPE": core} if core else {}))
shape = ["--depth", str(a.depth), "--width", str(a.width), "--head-dim", "16", "--seq-len", "64",
         "--micro-batch", "32", "--batch-tokens", "2048"]


def cpu_seconds(cmd, env=None):
    """CPU seconds of cmd and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, out


# Each run gives (CPU seconds, the fastest step's wall ms after the first two steps): the
# second is a check on the first that descheduling and other processes inflate less
# (some step runs undisturbed).
def train(n, impl):
    out = tempfile.mkdtemp(prefix="train-cpu-")
    try:
        cpu, _ = cpu_seconds([f"{a.bin}/train", "--data", a.data, "--out", out, *shape, "--steps", str(n),
                              "--warmup-steps", "2", "--threads", "1", "--peak-flops", "1e11", "--val-tokens", "65",
                              "--checkpoint-every", "0", "--log-every", "1", "--block-impl", impl])
        with open(os.path.join(out, "metrics.jsonl")) as f:
            steps = [json.loads(line) for line in f]
        return cpu, min(r["step_ms"] for r in steps if r.get("kind") == "train" and r["step"] > 2)
    finally:
        shutil.rmtree(out)


def reference(n, _):
    here = os.path.dirname(os.path.abspath(__file__))
    cpu, out = cpu_seconds([a.python, f"{here}/train_reference.py", *shape, "--vocab-size", "2048", "--steps",
                            str(n), "--skip", "2", "--threads", "1", "--peak", "1e11"], tuned)
    return cpu, json.loads(out.strip().splitlines()[-1])["min_step_ms"]


impls = a.block_impl.split(",")
sides = [(f"train-{impl}" if len(impls) > 1 else "train", train, impl) for impl in impls]
sides.append(("pt-tuned", reference, None))
runs = {name: ([], []) for name, _, _ in sides}  # CPU seconds of the n1-step and the n2-step runs
fastest = {name: [] for name, _, _ in sides}  # fastest step of each n2-step run, wall ms
for _ in range(a.reps):  # interleaved, so that a change in the machine's load hits every side
    for name, run, impl in sides:
        runs[name][0].append(run(a.n1, impl)[0])
        cpu, step_ms = run(a.n2, impl)
        runs[name][1].append(cpu)
        fastest[name].append(step_ms)


# Other processes inflate CPU time too (shared caches, frequency): the least time of each
# run length is the nearest to the unloaded one, so "best" differences the minima.
def per_step(short, long):
    return (long - short) / (a.n2 - a.n1) * 1000


best = {}
for name, (short, long) in runs.items():
    best[name] = per_step(min(short), min(long))
    each = " ".join(f"{per_step(x, y):.1f}" for x, y in zip(short, long))
    print(f"{a.depth}Lx{a.width}W {name:<11} CPU ms/step {each}  best {best[name]:.1f}")
for name, v in fastest.items():
    print(f"{a.depth}Lx{a.width}W {name:<11} fastest step, wall ms " + " ".join(f"{x:.1f}" for x in v) +
          f"  best {min(v):.1f}")
for name, _, _ in sides[:-1]:
    print(f"{a.depth}Lx{a.width}W pt-tuned / {name}: CPU {best['pt-tuned'] / best[name]:.2f}x, "
          f"fastest step {min(fastest['pt-tuned']) / min(fastest[name]):.2f}x")
