#!/usr/bin/env bash
# How far does SHARDS sampling move `simulate --policies` off the exact grid?
# Simulates TRACE exactly (--sample 1), then at each rate of RATES ("auto":
# the rate simulate picks without --sample), and prints per rate the wall
# time, the requests simulated, the largest and mean |miss ratio error| over
# the cells, the largest stated 95% bound, and how many cells were within
# their bound; then each cell's exact and sampled miss ratio (VERBOSE=1).
#
#   bench/grid_sampling.sh TRACE [build/inferprof]
#   env: POLICIES=lru,fifo,clock,sieve,s3fifo,arc,wtinylfu,2q,slru  SIZES=1k,5k,10k,25k
#        RATES="auto 0.5 0.1 0.01"  EXTRA=""  (e.g. EXTRA="--csv-columns ts=time,key=lbn")  VERBOSE=0
#        KEEP=DIR (keep each run's JSON there)
set -euo pipefail
T=${1:?usage: $0 TRACE [build/inferprof]}
B=${2:-build/inferprof}
POLICIES=${POLICIES:-lru,fifo,clock,sieve,s3fifo,arc,wtinylfu,2q,slru}
SIZES=${SIZES:-1k,5k,10k,25k}
RATES=${RATES:-auto 0.5 0.1 0.01}
VERBOSE=${VERBOSE:-0}
read -r -a EXTRA_ARGS <<< "${EXTRA:-}"
D=$(mktemp -d)
trap '[[ -n ${KEEP:-} ]] && mkdir -p "$KEEP" && cp "$D"/*.json "$KEEP"/; rm -rf "$D"' EXIT
run() {  # run NAME [--sample R]: the grid as JSON, "WALL" seconds in $D/NAME.time
  local name=$1
  shift
  /usr/bin/time -f '%e' -o "$D/$name.time" "$B" simulate --trace "$T" "${EXTRA_ARGS[@]}" --policies "$POLICIES" \
    --sizes "$SIZES" "$@" --format json > "$D/$name.json"
}
echo "load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
run exact --sample 1
for r in $RATES; do
  if [[ $r == auto ]]; then run auto; else run "$r" --sample "$r"; fi
done
python3 - "$D" "$VERBOSE" $RATES <<'PY'
import json, sys
d, verbose, rates = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
def load(name):
    g = json.load(open(f"{d}/{name}.json"))["policies"]
    return g, float(open(f"{d}/{name}.time").read().split()[0])
exact, et = load("exact")
keys = load("auto")[0]["sampling"]["estimated_keys"] if "auto" in rates else float("nan")
print(f"exact: {exact['sampling']['requests']:,} requests, ~{keys:,.0f} distinct keys (the first pass's estimate), "
      f"{et:.2f} s wall")
print(f"{'rate':>10} {'wall s':>7} {'simulated':>11} {'max |err|':>9} {'mean |err|':>10} {'max bound':>9} {'within':>7}")
for r in rates:
    g, t = load(r)
    s = g["sampling"]
    errs, inside = [], 0
    for e, c in zip(exact["cells"], g["cells"]):
        err = abs(c["miss_ratio"] - e["miss_ratio"])
        errs.append(err)
        bound = c["miss_ratio_error"]
        inside += bound is None or err <= bound
        if verbose:
            print(f"   {c['policy']:10} {c['size']:>6} exact {e['miss_ratio']:.4f} sampled {c['miss_ratio']:.4f}"
                  f" bound {bound if bound is not None else 0:.4f}")
    label = f"{r}" + (f" ({s['rate']:.4g})" if r == "auto" else "")
    print(f"{label:>10} {t:7.2f} {s['sampled_requests']:>11,} {max(errs):9.4f} {sum(errs) / len(errs):10.4f}"
          f" {s['max_miss_ratio_error']:9.4f} {inside:>3}/{len(errs)}")
PY
