#!/usr/bin/env bash
# Two builds' instrumentation overhead, interleaved: bench_overhead of build A,
# then of build B, PAIRS times, alone and then under deliberate load
# (busy_load.sh). Prints each process's `run threaded` and `run inline` rows
# (added µs over that process's own bare loop) and their medians per build and
# phase, so a change's effect on the overhead is read side by side.
#
#   bench/overhead_ab.sh A/bench/bench_overhead B/bench/bench_overhead
#   env: PAIRS=4  ROUNDS=3  REQUESTS=40000  ARCH=mlp  BUSY=1  CORES=0-(nproc-1)  PHASES="alone loaded"
set -euo pipefail
A=$1 B=$2
PAIRS=${PAIRS:-4} ROUNDS=${ROUNDS:-3} REQUESTS=${REQUESTS:-40000} ARCH=${ARCH:-mlp}
source "$(dirname "$0")/busy_load.sh"
trap stop_load EXIT
trap 'exit 130' INT TERM
LOG=$(mktemp)
trap 'stop_load; rm -f "$LOG"' EXIT

for PHASE in $PHASES; do
  start_load_for "$PHASE"
  echo "== $PHASE: load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for p in $(seq "$PAIRS"); do
    for SIDE in A B; do
      BIN=$A; [[ $SIDE == B ]] && BIN=$B
      taskset -c "$CORES" "$BIN" --arch "$ARCH" --rounds "$ROUNDS" --requests "$REQUESTS" >"$LOG.out"
      for ROW in "run threaded" "run inline" "bare"; do
        us=$(grep -m1 "^$ROW " "$LOG.out" | awk '{print $(NF-6)+0, $(NF-5)+0}')
        echo "$PHASE $SIDE $p $ROW $us" >>"$LOG"
      done
      printf '   pair %d %s: added µs: run threaded %s, inline %s; bare %s µs/req\n' "$p" "$SIDE" \
        "$(grep "^$PHASE $SIDE $p run threaded" "$LOG" | awk '{print $NF}')" \
        "$(grep "^$PHASE $SIDE $p run inline" "$LOG" | awk '{print $NF}')" \
        "$(grep "^$PHASE $SIDE $p bare" "$LOG" | awk '{print $(NF-1)}')"
    done
  done
  stop_load
  echo "   load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
rm -f "$LOG.out"
echo "== medians of the processes' medians (added µs per request over the bare loop; range)"
python3 - "$LOG" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    phase, side, row = f[0], f[1], " ".join(f[3:-2])
    rows.setdefault((phase, row, side), []).append(float(f[-1]))
for (phase, row, side), v in sorted(rows.items()):
    if row == "bare": continue
    print(f"{phase:7} {row:13} {side}: {statistics.median(v):+.2f} ({min(v):+.2f} … {max(v):+.2f}), n={len(v)}")
PY
