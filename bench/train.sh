#!/usr/bin/env bash
# Trainer benchmark: `train` (LibTorch C++) side by side with bench/train_reference.py
# (the same model, batch and step in Python PyTorch, Debian's python3-torch = the same
# LibTorch), on the same machine, thread count and matmul peak, at two shapes:
#   tiny  2L x 128W, seq 128 (micro-batch 16, and tiny4: micro-batch 4)
#   mid   8L x 512W, seq 512 (micro-batch 1); every step = 2 accumulated micro-batches
#   w16, w64  the micro-study's own runs (pipelines/micro.mk): 16L x 16W / 64W, head dim
#         16, seq 64, micro-batch 32, vocabulary 2048, one micro-batch (2048 tokens) per
#         step, once per thread count in STUDY_THREADS (default "1 2"), STEPS_STUDY steps;
#         train three times: the aten block (`train`), the fused block the study runs
#         (`fused`, the fixed kernel set, the default) and the fused block with
#         --kernels native (`fused-nat`: this CPU's fastest kernels), so that the
#         summary gives what the fixed set costs (fixed / native)
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
#        SHAPES ("tiny tiny4 mid w16 w64"), STUDY_THREADS ("1 2"), STEPS_STUDY (20),
#        PYTHON (/usr/bin/python3, must import torch), BIN (build/bin),
#        REFERENCE (1; 0: train's rows only, no PyTorch reference and no torch needed)
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
SHAPES=${SHAPES:-tiny tiny4 mid w16 w64}
STUDY_THREADS=${STUDY_THREADS:-1 2}
STEPS_STUDY=${STEPS_STUDY:-20}
REFERENCE=${REFERENCE:-1}
[ -x "$BIN/train" ] || { echo "bench/train.sh: $BIN/train not built (LibTorch missing?)" >&2; exit 1; }
[ "$REFERENCE" = 0 ] || "$PYTHON" -c 'import torch' 2>/dev/null ||
  { echo "bench/train.sh: $PYTHON cannot import torch (apt-get install python3-torch, or REFERENCE=0)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# random-token shards per vocabulary (the study's shapes use the study's 2048)
shards() {
  [ -f "$work/shards-$1/manifest.json" ] ||
    "$BIN/train" --make-synthetic-shards "$work/shards-$1" --synthetic-tokens 3000000 --vocab-size "$1" 2>/dev/null
  echo "$work/shards-$1"
}
# the OpenBLAS kernels train runs with ("BLAS: OpenBLAS SkylakeX (detected as Prescott, corrected), ...")
CORE=$("$BIN/train" --version | sed -n 's/^BLAS: OpenBLAS \([A-Za-z0-9]*\).*/\1/p')
tuned_env() { echo OPENBLAS_NUM_THREADS="$1" OMP_WAIT_POLICY=PASSIVE MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=1073741824 ${CORE:+OPENBLAS_CORETYPE=$CORE}; }
# the machine's attainable fp32 matmul rate at a thread count, measured once per count
declare -A PEAKS
peak() {
  [ "$REFERENCE" != 0 ] || { PEAKS[$1]=${PEAKS[$1]:-0}; return; }  # 0: the first train run measures it
  [ -n "${PEAKS[$1]:-}" ] || PEAKS[$1]=$(env $(tuned_env "$1") "$PYTHON" - "$1" <<'PY'
import sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
n = 1024
a, b = torch.randn(n, n), torch.randn(n, n)
torch.matmul(a, b)
best = 0.0
for _ in range(5):  # best of 5 windows of 0.2 s
    iters, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < 0.2:
        torch.matmul(a, b); iters += 1
    best = max(best, 2.0 * n ** 3 * iters / (time.perf_counter() - t0))
print(f"{best:.6g}")
PY
)
}
peak "$THREADS"
echo "# bench-train: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, THREADS=$THREADS, VOCAB=$VOCAB, STEPS=$STEPS (first $SKIP untimed), matmul peak $([ "$REFERENCE" = 0 ] && echo "measured by each shape's first train run" || awk -v p="${PEAKS[$THREADS]}" 'BEGIN{printf "%.1f GFLOP/s", p/1e9}') fp32$([ "$REFERENCE" = 0 ] && echo "" || echo ", torch $("$PYTHON" -c 'import torch; print(torch.__version__)')")"
echo "# kernels: $("$BIN/train" --version | sed -n 's/^kernels: //p') | native: $("$BIN/train" --kernels native --version | sed -n 's/^kernels: native: //p')"
[ "$REFERENCE" = 0 ] || echo "# pt-tuned environment: $(tuned_env "$THREADS")"
printf '%-8s %-9s %10s %7s %9s %9s %9s %9s %9s\n' shape impl tokens/s MFU step_ms fwd_ms bwd_ms opt_ms data_ms

# one shape at one thread count: train (once per variant in TRAIN_VARIANTS: name=flags),
# then the reference as a user starts it and tuned
# label D W S(eq) M(icro-batch) HD(head dim) B(atch tokens) V(ocab) T(hreads) N(steps)
TRAIN_VARIANTS=("train=")
run_shape() {
  local label=$1 D=$2 W=$3 S=$4 M=$5 HD=$6 B=$7 V=$8 T=$9 N=${10} data out py pt results variant name
  data=$(shards "$V")
  peak "$T"
  local P=${PEAKS[$T]}
  for rep in $(seq "$REPEAT"); do
    results=()
    for variant in "${TRAIN_VARIANTS[@]}"; do
      name=${variant%%=*}
      out="$work/$label-$name-$rep"
      # shellcheck disable=SC2086
      "$BIN/train" --data "$data" --out "$out" --depth $D --width $W --head-dim $HD --seq-len $S \
        --micro-batch $M --batch-tokens $B --steps "$N" --warmup-steps 2 --threads "$T" \
        --peak-flops "$P" --val-tokens $((S + 1)) --checkpoint-every 0 --log-every 0 ${variant#*=} 2>"$out.log" \
        || { cat "$out.log" >&2; exit 1; }
      if [ "$P" = 0 ]; then  # REFERENCE=0: the first run's measured peak is every row's MFU denominator
        P=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["peak_flops"])' "$out/summary.json")
        PEAKS[$T]=$P
      fi
      results+=("$name" "$("$PYTHON" - "$out/metrics.jsonl" "$SKIP" "$B" "$out/summary.json" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l][int(sys.argv[2]):]
b = int(sys.argv[3])
summary = json.load(open(sys.argv[4]))
fpt, peak = summary["flops_per_token"], summary["peak_flops"]
ms = lambda k: sum(r[k] for r in rows) / len(rows)
tps = b * len(rows) / (sum(r["step_ms"] for r in rows) / 1000)
print(json.dumps({"tokens_per_s": tps, "mfu": fpt * tps / peak, "step_ms": ms("step_ms"), "forward_ms": ms("forward_ms"),
                  "backward_ms": ms("backward_ms"), "optimizer_ms": ms("optimizer_ms"), "data_wait_ms": ms("data_wait_ms")}))
PY
)")
    done
    if [ "$REFERENCE" != 0 ]; then
      local reference=("$PYTHON" bench/train_reference.py --depth $D --width $W --head-dim $HD --seq-len $S --vocab-size "$V"
        --micro-batch $M --batch-tokens $B --steps "$N" --skip "$SKIP" --threads "$T" --peak "$P")
      py=$("${reference[@]}")
      pt=$(env $(tuned_env "$T") "${reference[@]}")
      results+=(pytorch "$py" pt-tuned "$pt")
    fi
    "$PYTHON" - "$label" "$work/results.jsonl" "${results[@]}" <<'PY'
import json, sys
shape, path, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(path, "a") as f:
    for name, r in zip(rest[0::2], map(json.loads, rest[1::2])):
        print(f"{shape:<8} {name:<9} {r['tokens_per_s']:10.1f} {100*r['mfu']:6.1f}% {r['step_ms']:9.1f} {r['forward_ms']:9.1f} "
              f"{r['backward_ms']:9.1f} {r['optimizer_ms']:9.1f} {r.get('data_wait_ms', 0.0):9.2f}", flush=True)
        f.write(json.dumps({**r, "shape": shape, "impl": name}) + "\n")
PY
  done
}

for shape in $SHAPES; do
  case $shape in
    tiny)  run_shape tiny  2 128 128 16 64 $((2 * 16 * 128)) "$VOCAB" "$THREADS" "$STEPS" ;;  # 2 x 2048 tokens per step
    tiny4) run_shape tiny4 2 128 128 4  64 $((2 * 4 * 128))  "$VOCAB" "$THREADS" "$STEPS" ;;  # 2 x 512: framework overhead shows
    mid)   run_shape mid   8 512 512 1  64 $((2 * 1 * 512))  "$VOCAB" "$THREADS" "$STEPS_MID" ;;  # slow on CPU
    w16|w64)
      TRAIN_VARIANTS=("train=" "fused=--block-impl fused" "fused-nat=--block-impl fused --kernels native")
      for t in $STUDY_THREADS; do
        run_shape "$shape-t$t" 16 "${shape#w}" 64 32 16 2048 2048 "$t" "$STEPS_STUDY"
      done
      TRAIN_VARIANTS=("train=") ;;
    *) echo "bench/train.sh: unknown shape $shape" >&2; exit 2 ;;
  esac
done
# best of REPEAT per side (the machine is shared: the best run is the least disturbed)
"$PYTHON" - "$work/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
impls = list(dict.fromkeys(r["impl"] for r in rows))
print("best of runs (tok/s; ratios: train's rows / pytorch where it ran, and fused / fused-nat: the fixed set's cost)")
print("  shape     " + "".join(f"{i:>12}" for i in impls) + "   ratios")
for shape in dict.fromkeys(r["shape"] for r in rows):
    best = {i: max(r["tokens_per_s"] for r in rows if r["shape"] == shape and r["impl"] == i)
            for i in impls if any(r["shape"] == shape and r["impl"] == i for r in rows)}
    ratios = []
    for ref in ("pytorch", "pt-tuned"):
        if ref in best:
            ratios += [f"{i}/{ref} {best[i] / best[ref]:.2f}x" for i in ("train", "fused") if i in best]
    if "fused" in best and "fused-nat" in best:
        ratios.append(f"fixed/native {best['fused'] / best['fused-nat']:.3f}x")
    print(f"  {shape:<8} " + "".join(f"{best[i]:12.1f}" if i in best else f"{'':>12}" for i in impls) + "   " + ", ".join(ratios))
PY
