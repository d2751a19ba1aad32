#!/usr/bin/env bash
# image-classification-jpeg's transform against torchvision's, alone and then
# under deliberate load (busy_load.sh: BUSY busy loops pinned on CORES, where
# both sides are pinned too): bench_image alternates the two request by
# request and prints the median of its per-round ratios with their range.
# Needs /usr/bin/python3 with PIL and torchvision (apt-get install
# python3-pil python3-torchvision); bench_image says so when they are missing.
#
#   bench/image_vs_torchvision.sh [build/bench/bench_image]
#   env: ROUNDS=31  BUSY=1  CORES=0-(nproc-1)  PHASES="alone loaded"
set -euo pipefail
B=${1:-build/bench/bench_image}
ROUNDS=${ROUNDS:-31}
source "$(dirname "$0")/busy_load.sh"
trap stop_load EXIT
trap 'exit 130' INT TERM

for PHASE in $PHASES; do
  start_load_for "$PHASE"
  echo "== $PHASE ($BUSY busy loop(s) on cores $CORES when loaded): load average $(cut -d' ' -f1-3 /proc/loadavg)"
  taskset -c "$CORES" "$B" "$ROUNDS"
  stop_load
done
