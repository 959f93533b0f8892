#!/usr/bin/env bash
# The checks only a GPU can show, as one prepared call on a lent device machine:
# builds `train` against the machine's pip LibTorch 2.x (CUDA), runs a CUDA smoke run
# with bf16 autocast, a kill and an exact resume, then bf16 throughput against the
# PyTorch reference. Prints the numbers to record in docs/benchmarks.md.
# Usage: scripts/gpu-check.sh   (needs python3 with torch >= 2.7 and a CUDA device)
set -euo pipefail
cd "$(dirname "$0")/.."
exec bench/train.sh --gpu-check "$@"
