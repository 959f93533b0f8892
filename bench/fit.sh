#!/usr/bin/env bash
# fit-law timings (docs/benchmarks.md, "fit-law"): the paper ansatz with 1000 bootstrap
# refits, and the full seven-law analysis, on the paper's 30 rows. The scipy peer
# (bench/scipy_chinchilla.py, ~15 minutes) runs only with WITH_SCIPY=1.
# Usage: bench/fit.sh   (via `make bench-fit`)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/build/bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
timed() {  # timed LABEL COMMAND...: wall and user CPU seconds
  local label=$1; shift
  local TIMEFORMAT='%R %U' t
  t=$( { time "$@" >/dev/null 2>&1; } 2>&1 )
  printf '%-48s wall %7s s   user %7s s\n' "$label" "${t% *}" "${t#* }"
}
timed "paper-log, LS loss space, B=1000" fit-law examples/paper/paper30.csv -m paper-log --loss ls --space loss -B 1000 --no-loo --holdout 0 --optimal-draws 0 --format csv
timed "paper-log, Huber(1e-3) log space, B=1000" fit-law examples/paper/paper30.csv -m paper-log -B 1000 --no-loo --holdout 0 --optimal-draws 0 --format csv
timed "all laws, full analysis" fit-law examples/paper/paper30.csv --n 12dw2 --loss ls --space loss -o "$work/fit.json" --format csv
python3 bench/gen_chinchilla.py > "$work/chin240.csv"
timed "chinchilla approach 3, 240 rows, B=0" fit-law "$work/chin240.csv" -m chinchilla -B 0 --no-loo --holdout 0 --optimal-draws 0 --format csv
if [ "${WITH_SCIPY:-0}" = 1 ]; then
  timed "scipy BFGS, 4500-start grid (peer)" python3 bench/scipy_chinchilla.py "$work/chin240.csv"
fi
