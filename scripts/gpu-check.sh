#!/usr/bin/env bash
# The checks only a GPU can show, as one prepared call on a machine with a CUDA GPU and a
# pip torch >= 2.7 (C++11 ABI, shared with Debian's libraries); meant to end within 8 minutes.
#   1. build `train` against python3's LibTorch 2.x (CUDA), with c10d NCCL where nccl.h is
#      found (if that fails, its first errors are printed and train is built without NCCL)
#   2. CUDA smoke run with bf16 autocast: killed at step 15, resumed from its checkpoint;
#      the resumed losses against an uninterrupted run (GPU kernels need not be bit-exact)
#   3. the data-parallel backend (NCCL) end to end on one rank (WORLD_SIZE=1 with
#      SHAPELAW_DIST_BACKEND): its losses against the plain run's
#   4. ZeRO-1 and ZeRO-2 (--zero 1, --zero 2) over that backend on one rank, activation
#      recomputation (--activation-checkpointing) and --block-impl fused's fallback to the aten
#      block (one message) on CUDA: their losses against the plain run's
#   5. the memory plan (train --plan) beside the peak the caching allocator measured
#      (summary.json "memory"), with and without recomputation, mid shape
#   6. bf16 tokens/s and MFU of train beside bench/train_reference.py, mid and large shapes
#   7. time permitting (BUDGET_S), the whole C++ test suite built against this LibTorch
# A GPU image lacks sentencepiece, zstd, Eigen, CLI11, nlohmann-json and Catch2 and cannot
# fetch them: scripts/gpu-deps fetches them beforehand into .gpu-deps/ (carry it); they are
# unpacked under a private prefix here.
# Usage: scripts/gpu-check.sh [--no-tests]
#   env: PYTHON (python3), GPU_BUILD (build-gpu), GPU_DEPS (.gpu-deps), BUDGET_S (360: step 7
#        runs only if 150 s of it are left; steps 1-6 have per-command timeouts),
#        GPU_CHECK_DEVICE (cuda; "cpu" rehearses every step on a CPU machine with small shapes)
# Lines starting "gpu-check" are the record; with $OUT set (the device tool), the whole
# log is also written to $OUT/gpu-check.log.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
BUILD=${GPU_BUILD:-build-gpu}
DEPS=${GPU_DEPS:-.gpu-deps}
BUDGET_S=${BUDGET_S:-360}
DEVICE=${GPU_CHECK_DEVICE:-cuda}
TESTS=1
case "${1:-}" in
  "") ;;
  --no-tests) TESTS=0 ;;
  -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
  *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then exec > >(tee "$OUT/gpu-check.log") 2>&1; fi
t0=$(date +%s)
say() { echo "gpu-check [$(( $(date +%s) - t0 ))s]: $*"; }
die() { say "FAILED: $*"; exit 1; }

# --- 0. the torch it builds against ----------------------------------------------------
"$PYTHON" - "$DEVICE" <<'PY' || exit 1
import sys, torch
if sys.argv[1] == "cuda" and not torch.cuda.is_available():
    sys.exit("gpu-check: FAILED: python3's torch sees no CUDA device")
if not int(torch._C._GLIBCXX_USE_CXX11_ABI):
    sys.exit("gpu-check: FAILED: this torch uses the pre-C++11 ABI (torch < 2.7): "
             "its LibTorch cannot link with Debian's libraries; use torch >= 2.7")
gpu = torch.cuda.get_device_name(0) if sys.argv[1] == "cuda" else "no GPU (rehearsal)"
print(f"gpu-check: torch {torch.__version__} (CUDA {torch.version.cuda}), {gpu}")
PY
prefixes=$("$PYTHON" -c 'import torch; print(torch.utils.cmake_prefix_path)')
configure_args=()
if compgen -G "$DEPS/*.deb" >/dev/null; then
  # inside the build directory, at a fixed path: CMake caches the paths it found, and a
  # second call on the same machine reuses the build directory
  deps="$(mkdir -p "$BUILD" && cd "$BUILD" && pwd)/debian-deps"
  rm -rf "$deps" && mkdir -p "$deps"
  for deb in "$DEPS"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$deps" || die "unpacking $deb"
    else  # a .deb is an ar archive holding data.tar.*
      unpack=$(mktemp -d) deb_path="$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")"
      (cd "$unpack" && ar x "$deb_path") && tar -xf "$unpack"/data.tar.* -C "$deps" \
        || die "unpacking $deb (no dpkg-deb; ar + tar)"
    fi
  done
  # the binaries find these libraries through the RPATH CMake gives them (no LD_LIBRARY_PATH,
  # which would also put Debian's libzstd under the image's own tools)
  prefixes="$prefixes;$deps/usr"
  configure_args+=(-DSHAPELAW_USE_PKGCONFIG=OFF)
  say "$(ls "$DEPS"/*.deb | wc -l) carried Debian packages unpacked in $deps"
fi

# --- 1. build ----------------------------------------------------------------------------
# find_package(Torch) of a CUDA wheel enables CUDA and needs the toolkit: pin the nvcc it
# uses and show the toolkit's layout, so that one session's log explains a failure.
if [ "$DEVICE" = cuda ]; then
  # nvcc on PATH, the usual toolkit place, or a pip wheel's (nvidia/*/bin/nvcc)
  nvcc_bin=$(command -v nvcc || true)
  [ -n "$nvcc_bin" ] || nvcc_bin=$(ls /usr/local/cuda/bin/nvcc $("$PYTHON" -c \
    'import os, nvidia; print(" ".join(os.path.join(p, "*", "bin", "nvcc") for p in nvidia.__path__))' 2>/dev/null) \
    2>/dev/null | head -1 || true)
  nvcc_bin=${nvcc_bin:-/usr/local/cuda/bin/nvcc}
  if [ -x "$nvcc_bin" ]; then
    cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc_bin")")")
    say "nvcc $nvcc_bin ($("$nvcc_bin" --version | tail -1)), toolkit $cuda_root"
    ls -d "$cuda_root"/include/{cuda_runtime_api.h,cublas_v2.h,nvtx3,cccl} "$cuda_root"/lib*/libcublas.so* 2>&1 \
      | sed 's/^/gpu-check: toolkit: /' || true
    configure_args+=(-DCMAKE_CUDA_COMPILER="$nvcc_bin" -DCUDAToolkit_ROOT="$cuda_root")
    for l in cudart cublas cublasLt cufft curand nvrtc; do  # pip layouts ship versioned sonames only
      ls "$cuda_root"/lib*/lib$l.so >/dev/null 2>&1 && continue
      f=$(ls "$cuda_root"/lib*/lib$l.so.* 2>/dev/null | head -1 || true)
      if [ -n "$f" ]; then configure_args+=(-DCUDA_${l}_LIBRARY="$f"); fi
      if [ -n "$f" ] && [ "$l" = cudart ]; then configure_args+=(-DCUDA_CUDART="$f"); fi
    done
  else
    say "no nvcc found: find_package(Torch) of a CUDA LibTorch will likely fail"
  fi
  # the GPU here, not detected by a test program at configure time
  configure_args+=(-DTORCH_CUDA_ARCH_LIST="$("$PYTHON" -c 'import torch; print("%d.%d" % torch.cuda.get_device_capability(0))')")
fi
configure_args+=(-DSHAPELAW_PYTHON3="$(command -v "$PYTHON")")
[ -f "$BUILD/CMakeCache.txt" ] || ! command -v ninja >/dev/null || configure_args+=(-G Ninja)
configure() {
  cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefixes" "${configure_args[@]}" "$@" \
    >"$BUILD.configure.log" 2>&1 || { tail -40 "$BUILD.configure.log"; die "configure (log: $BUILD.configure.log)"; }
}
configure
grep -q "LibTorch .* found: building" "$BUILD.configure.log" || {
  grep -iE "torch|caffe2|cuda|nvtx|error" "$BUILD.configure.log" | tail -40; die "find_package(Torch) failed"; }
grep -E "shapelaw:|CUDA|NCCL|nccl" "$BUILD.configure.log" | head -20 | sed 's/^/gpu-check: configure: /' || true
if ! cmake --build "$BUILD" --target train -j "$(nproc)" >"$BUILD.build.log" 2>&1; then
  say "build failed; first errors:"
  grep -m 8 -E "error|undefined reference" "$BUILD.build.log" || tail -30 "$BUILD.build.log"
  grep -q "SHAPELAW_HAVE_NCCL" "$BUILD.build.log" || grep -q "c10d NCCL enabled" "$BUILD.configure.log" || die "build"
  say "retrying without NCCL"
  configure_args+=(-DSHAPELAW_WITH_NCCL=OFF) && configure
  cmake --build "$BUILD" --target train -j "$(nproc)" >"$BUILD.build.log" 2>&1 || { tail -40 "$BUILD.build.log"; die "build"; }
fi
say "train built"
T="$BUILD/bin/train"
"$T" --version >"$BUILD/train-version.txt" || die "train --version"
sed 's/^/gpu-check: /' "$BUILD/train-version.txt"

# --- 2. smoke run, kill and resume --------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "$DEVICE" = cuda ]; then
  vocab=50257 tokens=20000000 smoke=(--depth 2 --width 256 --seq-len 256 --micro-batch 8 --batch-tokens 4096)
  shapes=("mid 8 512 1024 16" "large 16 1024 1024 8")
else
  vocab=4096 tokens=400000 smoke=(--depth 2 --width 64 --seq-len 64 --micro-batch 4 --batch-tokens 512)
  shapes=("tiny 2 128 128 8")
fi
"$T" --make-synthetic-shards "$work/shards" --synthetic-tokens "$tokens" --vocab-size "$vocab" 2>"$work/shards.log" \
  || { tail -5 "$work/shards.log"; die "synthetic shards"; }
common=(--data "$work/shards" --device "$DEVICE" --head-dim 64 --warmup-steps 5 --val-tokens 65600)
run_smoke() {  # out, extra args... (a hang, e.g. in a rendezvous, must not eat the call)
  local out=$1; shift
  timeout 240 "$T" "${common[@]}" "${smoke[@]}" --out "$out" --steps 20 --checkpoint-every 10 --log-every 10 "$@" 2>>"$work/smoke.log"
}
compare_losses() {  # label, run a, run b, first step compared
  "$PYTHON" - "$@" <<'PY'
import json, math, sys
label, a, b, first = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def losses(run):
    return {r["step"]: r["loss"] for r in map(json.loads, open(run + "/metrics.jsonl")) if r.get("kind") == "train"}
la, lb = losses(a), losses(b)
steps = [s for s in sorted(la) if s >= first]
assert steps and all(s in lb for s in steps), (label, sorted(la), sorted(lb))
assert all(math.isfinite(lb[s]) for s in steps), (label, lb)
diff = max(abs(la[s] - lb[s]) for s in steps)
print(f"gpu-check: {label}: steps {steps[0]}-{steps[-1]}, max |loss difference| {diff:.3g}"
      f"{' (bit-identical)' if diff == 0 else ''}; final loss {la[steps[-1]]:.4f}")
PY
}
say "smoke run (${smoke[*]}, 20 steps); a second one killed at step 15 and resumed"
run_smoke "$work/straight" || { tail -20 "$work/smoke.log"; die "smoke run"; }
run_smoke "$work/resumed" --debug-kill-at-step 15 || true
[ ! -f "$work/resumed/summary.json" ] && compgen -G "$work/resumed/checkpoints/step_*" >/dev/null \
  || die "the run meant to be killed at step 15 was not (summary written, or no checkpoint)"
run_smoke "$work/resumed" --resume || { tail -20 "$work/smoke.log"; die "resume"; }
"$PYTHON" - "$work/resumed/summary.json" "$DEVICE" <<'PY' || die "smoke summary"
import json, math, sys
s = json.load(open(sys.argv[1]))
want = "bf16" if sys.argv[2] == "cuda" else "fp32"
assert s["steps"] == 20 and s["precision"] == want and s["device"].startswith(sys.argv[2]), s
assert math.isfinite(s["final_train_loss"]) and math.isfinite(s["final_val_loss"]), s
print(f"gpu-check: smoke ok: {s['precision']} on {s['device']}, final train loss {s['final_train_loss']:.4f}, "
      f"val {s['final_val_loss']:.4f}")
PY
compare_losses "resume after kill vs uninterrupted" "$work/straight" "$work/resumed" 16 || die "resume comparison"

# --- 3. the data-parallel backend on one rank ----------------------------------------------
backend=gloo
grep -q "nccl" "$BUILD/train-version.txt" && [ "$DEVICE" = cuda ] && backend=nccl
if SHAPELAW_DIST_BACKEND=$backend WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \
    run_smoke "$work/one-rank" --checkpoint-every 0; then
  compare_losses "$backend on one rank vs no process group" "$work/straight" "$work/one-rank" 1 || die "$backend comparison"
else
  say "$backend on one rank FAILED:"; tail -5 "$work/smoke.log"
fi

# --- 4. ZeRO-1 and ZeRO-2 over the backend on one rank; activation recomputation ----------
# ZeRO-2 with 1 MiB buckets: its AccumulateGrad hooks send several buckets per backward
# from the CUDA autograd thread, with recomputation's nested backward among them
for stage in 1 2; do
  extra=(); [ "$stage" = 2 ] && extra=(--bucket-mb 1 --activation-checkpointing)
  if SHAPELAW_DIST_BACKEND=$backend WORLD_SIZE=1 RANK=0 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((29517 + stage)) \
      run_smoke "$work/zero$stage" --checkpoint-every 0 --zero "$stage" "${extra[@]}"; then
    compare_losses "ZeRO-$stage ${extra[*]} over $backend on one rank vs plain AdamW" "$work/straight" "$work/zero$stage" 1 \
      || die "ZeRO-$stage comparison"
  else
    say "ZeRO-$stage over $backend on one rank FAILED:"; tail -5 "$work/smoke.log"
  fi
done
if run_smoke "$work/recompute" --checkpoint-every 0 --activation-checkpointing; then
  compare_losses "activation recomputation vs plain" "$work/straight" "$work/recompute" 1 || die "recompute comparison"
else
  say "activation recomputation FAILED:"; tail -5 "$work/smoke.log"
fi
# --block-impl fused is CPU float32 only: on CUDA it must run the aten block (the same
# losses as the plain run) and say so once per process, not once per block and step
fallback='--block-impl fused: CPU float32 only'
before=$(grep -c -- "$fallback" "$work/smoke.log" || true)
if run_smoke "$work/fused" --checkpoint-every 0 --block-impl fused; then
  said=$(( $(grep -c -- "$fallback" "$work/smoke.log" || true) - before ))
  say "--block-impl fused on $DEVICE: the fallback message $said time(s) (expected: 1 on cuda, 0 on a CPU rehearsal without autocast)"
  compare_losses "--block-impl fused (falls back on $DEVICE) vs plain" "$work/straight" "$work/fused" 1 || die "fused comparison"
else
  say "--block-impl fused FAILED:"; tail -5 "$work/smoke.log"
fi

# --- 5. the memory plan beside the measured peak -----------------------------------------
set -- ${shapes[0]}
plan_shape=(--depth "$2" --width "$3" --seq-len "$4" --micro-batch "$5" --batch-tokens $(( $5 * $4 * 2 )))
for recompute in "" --activation-checkpointing; do
  label="memory ${1}${recompute:+ recomputed}"
  args=("${common[@]}" "${plan_shape[@]}" --steps 3 --checkpoint-every 0 --log-every 0 $recompute)
  if timeout 120 "$T" "${args[@]}" --out "$work/plan-$1$recompute" 2>>"$work/smoke.log" \
      && "$T" "${args[@]}" --plan --format json >"$work/plan-$1$recompute.json" 2>>"$work/smoke.log"; then
    "$PYTHON" - "$work/plan-$1$recompute/summary.json" "$work/plan-$1$recompute.json" "$label" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["memory"]
p = json.load(open(sys.argv[2]))["bytes_per_rank"]
meas = m["measured"]
state = {k: meas[k] for k in ("weights", "gradients", "optimizer_state")}
print(f"gpu-check: {sys.argv[3]}: plan peak {p['peak'] / 1e9:.3f} GB (activations {p['activations']['used'] / 1e9:.3f}), "
      f"measured peak {meas['peak'] / 1e9:.3f} GB (activations {meas['activations'] / 1e9:.3f}), "
      f"plan/measured {p['peak'] / max(meas['peak'], 1):.2f}; state plan "
      f"{p['weights']}/{p['gradients']}/{p['optimizer_moments']} B, measured "
      f"{state['weights']}/{state['gradients']}/{state['optimizer_state']} B")
PY
  else
    say "$label FAILED:"; tail -5 "$work/smoke.log"
  fi
done

# --- 6. throughput beside the PyTorch reference --------------------------------------------
for shape in "${shapes[@]}"; do
  set -- $shape
  name=$1 D=$2 W=$3 S=$4 M=$5 B=$(( $5 * $4 * 2 ))
  timeout 240 "$T" "${common[@]}" --out "$work/$name" --depth "$D" --width "$W" --seq-len "$S" --micro-batch "$M" \
    --batch-tokens "$B" --steps 12 --checkpoint-every 0 --log-every 0 2>"$work/$name.log" || { cat "$work/$name.log"; die "$name run"; }
  "$PYTHON" - "$work/$name" "$name" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if '"train"' in l][2:]
s = json.load(open(sys.argv[1] + "/summary.json"))
tps = sum(r["tokens_per_s"] for r in rows) / len(rows)
print(f"gpu-check: {sys.argv[2]:<5} train    {tps:12.0f} tok/s  MFU {100 * s['flops_per_token'] * tps / s['peak_flops']:5.1f}% "
      f"({s['precision']} matmul peak {s['peak_flops'] / 1e12:.1f} TFLOP/s measured)")
PY
  bf16=(); [ "$DEVICE" = cuda ] && bf16=(--bf16)
  # one MFU denominator for both: the matmul peak train measured
  peak=$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["peak_flops"])' "$work/$name/summary.json")
  timeout 240 "$PYTHON" bench/train_reference.py --device "$DEVICE" "${bf16[@]}" --peak "$peak" --depth "$D" --width "$W" --seq-len "$S" \
    --vocab-size "$vocab" --micro-batch "$M" --batch-tokens "$B" --steps 12 --skip 2 \
    | "$PYTHON" -c "import json,sys; r=json.load(sys.stdin); print(f\"gpu-check: $name pytorch  {r['tokens_per_s']:12.0f} tok/s  MFU {100*r['mfu']:5.1f}%\")" \
    || say "$name reference FAILED"
done

# --- 7. the test suite against this LibTorch ----------------------------------------------
left=$(( BUDGET_S - ($(date +%s) - t0) ))
if [ "$TESTS" = 1 ] && [ "$left" -gt 150 ]; then
  say "building the tests ($left s of the budget left)"
  if timeout $(( left - 60 )) cmake --build "$BUILD" -j "$(nproc)" >"$BUILD.build-all.log" 2>&1; then
    left=$(( BUDGET_S - ($(date +%s) - t0) ))
    (cd "$BUILD" && timeout $(( left > 30 ? left : 30 )) ctest -j "$(nproc)" --timeout 300 >"$work/ctest.log" 2>&1) || true
    grep -E "tests passed|tests failed" "$work/ctest.log" | sed 's/^/gpu-check: ctest: /' || say "ctest gave no summary (timed out?)"
    grep -E "\*\*\*|Failed" "$work/ctest.log" | head -15 | sed 's/^/gpu-check: ctest: /' || true
  else
    say "test build failed or ran out of time; first errors:"
    grep -m 8 -E "error|undefined reference" "$BUILD.build-all.log" || tail -5 "$BUILD.build-all.log"
  fi
else
  say "tests skipped (${left} s of the ${BUDGET_S} s budget left)"
fi
say "done"
