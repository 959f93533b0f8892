#!/usr/bin/env bash
# Data-stage benchmarks, each side by side with its peer in the same run:
#   1. `tokenize encode` MB/s at 1 and 2 threads vs Debian's `spm_encode` on identical text
#   2. shard read on one core vs a raw uint16 file (bench_shard_read)
#   3. compressed size vs raw uint16 tokens
# Usage: bench/data.sh   (via `make bench-data`; uses the micro pipeline's corpus and model)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/build/bin:$PATH"
DATA=${DATA:-data}
REPEAT=${REPEAT:-4}
make --no-print-directory -f pipelines/micro.mk DATA="$DATA" data >/dev/null
model="$DATA/micro/tokenizer.model"
shards="$DATA/micro/shards"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Identical input for both tools: every non-empty text line of the training corpus,
# REPEAT times; one line = one document for us, one sentence for spm_encode.
python3 - "$DATA/corpus/brown/train" "$work" "$REPEAT" <<'PY'
import json, pathlib, subprocess, sys
src, work, repeat = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
lines = []
for f in sorted(src.rglob("*.jsonl.zst")):
    raw = subprocess.run(["zstd", "-dc", str(f)], check=True, capture_output=True).stdout.decode()
    for row in raw.splitlines():
        lines += [l for l in json.loads(row)["text"].split("\n") if l.strip()]
lines *= repeat
(work / "lines.txt").write_text("\n".join(lines) + "\n")
with open(work / "lines.jsonl", "w") as out:
    for l in lines:
        out.write(json.dumps({"text": l}) + "\n")
PY
mb=$(python3 -c "import os,sys; print(os.path.getsize(sys.argv[1]) / 1e6)" "$work/lines.txt")

best_of_3() {  # prints the best wall time in seconds of three runs of "$@"
  local best=1e9
  for _ in 1 2 3; do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N)
    best=$(python3 -c "print(min($best, $t1 - $t0))")
  done
  echo "$best"
}
spm=$(best_of_3 spm_encode --model "$model" --output_format=id --input "$work/lines.txt" --output /dev/null)
t1=$(best_of_3 tokenize encode -q -t 1 -m "$model" "$work/lines.jsonl" -o /dev/null)
t2=$(best_of_3 tokenize encode -q -t 2 -m "$model" "$work/lines.jsonl" -o /dev/null)
echo "== tokenize encode vs spm_encode: ${mb} MB of text ($(wc -l <"$work/lines.txt") lines), $(nproc) cores, best of 3"
python3 - "$mb" "$spm" "$t1" "$t2" <<'PY'
import sys
mb, spm, t1, t2 = map(float, sys.argv[1:])
print(f"spm_encode (1 thread)     {mb/spm:7.2f} MB/s   1.00x")
print(f"tokenize encode -t 1      {mb/t1:7.2f} MB/s   {spm/t1:.2f}x spm_encode")
print(f"tokenize encode -t 2      {mb/t2:7.2f} MB/s   {spm/t2:.2f}x spm_encode  (thread scaling {t1/t2:.2f}x)")
PY

echo "== shard read, one core (taskset -c 0)"
taskset -c 0 bench_shard_read "$shards" 1024 2000 20 2>/dev/null

echo "== size"
shard inspect "$shards" | grep -E "^(format|compression):"
