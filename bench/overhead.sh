#!/usr/bin/env bash
# Instrumentation overhead (issue 10, item 6): bench_overhead's interleaved
# rounds, alone and then under deliberate load (busy_load.sh: BUSY busy
# loops pinned on CORES, where bench_overhead is pinned too), for the MLP and
# the CNN. Prints each phase's load average and bench_overhead's table.
#
#   bench/overhead.sh [build/bench/bench_overhead]
#   env: ARCHS="mlp cnn"  ROUNDS=5  REQUESTS=(bench_overhead's default per arch)  BUSY=1  CORES=0-(nproc-1)
#        PHASES="alone loaded"
set -euo pipefail
B=${1:-build/bench/bench_overhead}
ARCHS=${ARCHS:-mlp cnn}
ROUNDS=${ROUNDS:-5}
REQUESTS=${REQUESTS:-}
source "$(dirname "$0")/busy_load.sh"
trap stop_load EXIT
trap 'exit 130' INT TERM

for PHASE in $PHASES; do
  start_load_for "$PHASE"
  for ARCH in $ARCHS; do
    echo "== $PHASE ($BUSY busy loop(s) on cores $CORES when loaded), $ARCH: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    taskset -c "$CORES" "$B" --arch "$ARCH" --rounds "$ROUNDS" ${REQUESTS:+--requests "$REQUESTS"}
    echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  done
  stop_load
done
