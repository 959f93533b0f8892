#!/usr/bin/env bash
# Trainer benchmark: `train` (LibTorch C++) side by side with bench/train_reference.py
# (the same model, batch and step in Python PyTorch, Debian's python3-torch = the same
# LibTorch), on the same machine, thread count and matmul peak, at two shapes:
#   tiny  2L x 128W, seq 128 (micro-batch 16, and tiny4: micro-batch 4)
#   mid   8L x 512W, seq 512 (micro-batch 1); every step = 2 accumulated micro-batches
# Reports tokens/s (timed steps only, after SKIP untimed ones), MFU against a 1024^3
# fp32 matmul peak measured once at the start of this run (with the BLAS kernels and
# threads `train` uses), and where a step's time goes (forward / backward / optimizer
# incl. clipping / data wait).
# The reference runs twice: `pytorch` as a user would start it, and `pt-tuned` with the
# process settings `train` makes for itself (lib/util/cpu_runtime.h: OpenBLAS core type
# and threads, passive OpenMP waiting, glibc keeping freed memory) given through the environment, so that the
# second ratio is the framework and kernel difference alone.
# Usage: bench/train.sh   (via `make bench-train`)
#   env: THREADS (default nproc), VOCAB (8192), STEPS (5), STEPS_MID (3), SKIP (1), REPEAT (1),
#        SHAPES ("tiny tiny4 mid"), PYTHON (/usr/bin/python3, must import torch), BIN (build/bin)
# The GPU side (bf16 throughput on CUDA beside the same reference): scripts/gpu-check.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-build/bin}
PYTHON=${PYTHON:-/usr/bin/python3}
THREADS=${THREADS:-$(nproc)}
VOCAB=${VOCAB:-8192}
STEPS=${STEPS:-5}
STEPS_MID=${STEPS_MID:-3}
SKIP=${SKIP:-1}
REPEAT=${REPEAT:-1}
SHAPES=${SHAPES:-tiny tiny4 mid}
[ -x "$BIN/train" ] || { echo "bench/train.sh: $BIN/train not built (LibTorch missing?)" >&2; exit 1; }
"$PYTHON" -c 'import torch' 2>/dev/null || { echo "bench/train.sh: $PYTHON cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$BIN/train" --make-synthetic-shards "$work/shards" --synthetic-tokens 3000000 --vocab-size "$VOCAB" 2>/dev/null
# the OpenBLAS kernels train runs with ("BLAS: OpenBLAS SkylakeX (detected as Prescott, corrected), ...")
CORE=$("$BIN/train" --version | sed -n 's/^BLAS: OpenBLAS \([A-Za-z0-9]*\).*/\1/p')
TUNED_ENV=(OPENBLAS_NUM_THREADS="$THREADS" OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824 ${CORE:+OPENBLAS_CORETYPE=$CORE})
PEAK=$(env "${TUNED_ENV[@]}" "$PYTHON" - "$THREADS" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
n = 1024
a, b = torch.randn(n, n), torch.randn(n, n)
torch.matmul(a, b)
best = 0.0
for _ in range(5):  # best of 5 windows of 0.2 s: the machine's attainable fp32 matmul rate
    iters, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        torch.matmul(a, b); iters += 1
    best = max(best, 2.0 * n ** 3 * iters / (time.perf_counter() - t0))
print(f"{best:.6g}")
PY
)
echo "# bench-train: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, THREADS=$THREADS, VOCAB=$VOCAB, STEPS=$STEPS (first $SKIP untimed), matmul peak $(awk -v p="$PEAK" 'BEGIN{printf "%.1f", p/1e9}') GFLOP/s fp32, torch $("$PYTHON" -c 'import torch; print(torch.__version__)')"
echo "# pt-tuned environment: ${TUNED_ENV[*]}"
printf '%-5s %-9s %10s %7s %9s %9s %9s %9s %9s\n' shape impl tokens/s MFU step_ms fwd_ms bwd_ms opt_ms data_ms

for shape in $SHAPES; do
  case $shape in
    tiny)  D=2; W=128; S=128; M=16; HD=64 ;;  # 2 x 2048 tokens per step
    tiny4) D=2; W=128; S=128; M=4;  HD=64 ;;  # 2 x 512: small ops, framework overhead shows
    mid)   D=8; W=512; S=512; M=1;  HD=64 ;;  # 2 x 512 (STEPS_MID steps: slow on CPU)
    *) echo "bench/train.sh: unknown shape $shape" >&2; exit 2 ;;
  esac
  B=$((2 * M * S))  # two micro-batches per step: accumulation is part of the step
  for rep in $(seq "$REPEAT"); do
    out="$work/$shape-$rep"
    N=$STEPS; [ "$shape" = mid ] && N=$STEPS_MID
    "$BIN/train" --data "$work/shards" --out "$out" --depth $D --width $W --head-dim $HD --seq-len $S \
      --micro-batch $M --batch-tokens $B --steps "$N" --warmup-steps 2 --threads "$THREADS" \
      --peak-flops "$PEAK" --val-tokens $((S + 1)) --checkpoint-every 0 --log-every 0 2>"$out.log" \
      || { cat "$out.log" >&2; exit 1; }
    cpp=$("$PYTHON" - "$out/metrics.jsonl" "$SKIP" "$B" "$PEAK" "$out/summary.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l][int(sys.argv[2]):]
b, peak = int(sys.argv[3]), float(sys.argv[4])
fpt = json.load(open(sys.argv[5]))["flops_per_token"]
ms = lambda k: sum(r[k] for r in rows) / len(rows)
tps = b * len(rows) / (sum(r["step_ms"] for r in rows) / 1000)
print(json.dumps({"tokens_per_s": tps, "mfu": fpt * tps / peak, "step_ms": ms("step_ms"), "forward_ms": ms("forward_ms"),
                  "backward_ms": ms("backward_ms"), "optimizer_ms": ms("optimizer_ms"), "data_wait_ms": ms("data_wait_ms")}))
PY
)
    reference=("$PYTHON" bench/train_reference.py --depth $D --width $W --head-dim $HD --seq-len $S --vocab-size "$VOCAB"
      --micro-batch $M --batch-tokens $B --steps "$N" --skip "$SKIP" --threads "$THREADS" --peak "$PEAK")
    py=$("${reference[@]}")
    pt=$(env "${TUNED_ENV[@]}" "${reference[@]}")
    "$PYTHON" - "$shape" "$cpp" "$py" "$pt" "$work/results.jsonl" <<'PY'
import json, sys
shape, cpp, py, pt = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
with open(sys.argv[5], "a") as f:
    for name, r in (("train", cpp), ("pytorch", py), ("pt-tuned", pt)):
        print(f"{shape:<5} {name:<9} {r['tokens_per_s']:10.1f} {100*r['mfu']:6.1f}% {r['step_ms']:9.1f} {r['forward_ms']:9.1f} "
              f"{r['backward_ms']:9.1f} {r['optimizer_ms']:9.1f} {r.get('data_wait_ms', 0.0):9.2f}", flush=True)
        f.write(json.dumps({**r, "shape": shape, "impl": name}) + "\n")
PY
  done
done
# best of REPEAT per side (the machine is shared: the best run is the least disturbed)
"$PYTHON" - "$work/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("best of runs: shape  train tok/s  pytorch tok/s  ratio  pt-tuned tok/s  ratio")
for shape in dict.fromkeys(r["shape"] for r in rows):
    best = {i: max(r["tokens_per_s"] for r in rows if r["shape"] == shape and r["impl"] == i)
            for i in ("train", "pytorch", "pt-tuned")}
    print(f"              {shape:<5} {best['train']:12.1f} {best['pytorch']:14.1f} {best['train'] / best['pytorch']:6.2f}x"
          f" {best['pt-tuned']:15.1f} {best['train'] / best['pt-tuned']:6.2f}x")
PY
