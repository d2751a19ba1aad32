#!/bin/sh
# Does `simulate` predict the speedup that `compare` measures? Replays a
# generated trace with `compare` (interleaved repeats, single worker, closed
# loop), then simulates the same tiers with the baseline run's costs, and
# prints predicted against measured mean-latency speedup for each
# configuration, failing (exit 1) when one is off by more than 10%.
#
#   bench/simulate_accuracy.sh [build/inferprof]      env: ARCH=cnn|mlp REQUESTS=400 REPEAT=3 WARMUP=30
#
# Hit counts are checked exactly in ctest (test/e2e/test_cli_simulate.cpp);
# this timing check lives here because on a shared 2-core VM the measured
# speedup itself moves by more than 10% between runs.
set -eu
B=${1:-build/inferprof}
ARCH=${ARCH:-cnn}
REQUESTS=${REQUESTS:-400}
REPEAT=${REPEAT:-3}
WARMUP=${WARMUP:-30}
case "$ARCH" in
  cnn) SHAPE=1,3,64,64 ;;
  mlp) SHAPE=1,16 ;;
  *) echo "ARCH must be cnn or mlp" >&2; exit 2 ;;
esac
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
"$B" gen-model --arch "$ARCH" -o "$D/m.pt" >/dev/null
"$B" gen-trace --requests "$REQUESTS" --keys 60 --zipf 1.0 --shape "$SHAPE" -o "$D/t.jsonl" >/dev/null
# Configurations named by one tier each, so the CSVs need no quoting.
"$B" compare "$D/m.pt" --trace "$D/t.jsonl" --caches none --caches l1 --caches l2 --tier l1=lru:10 \
  --tier l2=lfu:30 --repeat "$REPEAT" --warmup "$WARMUP" --no-progress --out "$D/c" --format csv >"$D/compare.csv"
"$B" simulate --trace "$D/t.jsonl" --tier l1=lru:10 --tier l2=lfu:30 --caches l1 --caches l2 \
  --costs "$D/c/none" --format csv >"$D/simulate.csv"
awk -F, '
  FNR == 1 { next }
  FILENAME ~ /compare/ { measured[$1] = $8; next }
  { predicted[$1] = $17 }
  END {
    bad = 0
    printf "%-6s %9s %9s %7s\n", "config", "measured", "predicted", "error"
    for (c in predicted) {
      err = (predicted[c] - measured[c]) / measured[c]
      printf "%-6s %8.3fx %8.3fx %6.1f%%\n", c, measured[c], predicted[c], 100 * err
      if (err > 0.10 || err < -0.10) bad = 1
    }
    exit bad
  }' "$D/compare.csv" "$D/simulate.csv"
