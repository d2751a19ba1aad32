#!/usr/bin/env bash
# Does `simulate` predict the speedup that a lockstep `compare` measures?
# For each model (a small CNN and a ResNet-18-shaped one) and one Zipf trace
# with repeated keys: a lockstep compare of none / l1 / l1,l2 (one process,
# request i served under each configuration in turn), a `run` with the tiers
# saved for its costs (each tier's lookups and inserts from its trace.json),
# then `simulate --costs` on that run. Prints predicted against measured
# speedup and the error; exit 1 when one is off by more than MAX_ERROR_PCT.
# Each phase in PHASES runs it all: "alone", then "loaded" with BUSY busy-loop
# processes pinned (taskset) on the cores the runs are pinned on (CORES),
# killed on exit.
#
#   bench/simulate_accuracy.sh [build/inferprof]
#   env: ARCHS="cnn resnet18"  REQUESTS_CNN=400  REQUESTS_RESNET18=150  KEYS=60  ZIPF=1.0
#        L1=lru:10  L2=lfu:30  MAX_ERROR_PCT=5  PHASES="alone loaded"  BUSY=1  CORES=0-(nproc-1)
#
# Hit counts are checked exactly in ctest (test/e2e/test_cli_simulate.cpp);
# the timing check lives here, with the load average printed beside it.
# "loaded" means BUSY busy loops besides whatever else runs: check the load average.
set -euo pipefail
B=${1:-build/inferprof}
ARCHS=${ARCHS:-cnn resnet18}
KEYS=${KEYS:-60}
ZIPF=${ZIPF:-1.0}
L1=${L1:-lru:10}
L2=${L2:-lfu:30}
MAX_ERROR_PCT=${MAX_ERROR_PCT:-5}
source "$(dirname "$0")/busy_load.sh"
D=$(mktemp -d)
trap 'stop_load; rm -rf "$D"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Lockstep is the default for a closed loop with one worker; name it when the binary knows the flag.
MODE=()
if "$B" compare --help | grep -qE -- '--mode([^a-z-]|$)'; then MODE=(--mode lockstep); fi
TIERS=(--tier "l1=$L1" --tier "l2=$L2")

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
bad=0
for PHASE in $PHASES; do
start_load_for "$PHASE"
[[ $PHASE == loaded ]] && echo "(loaded: $BUSY busy loops pinned on cores $CORES)"
for ARCH in $ARCHS; do
  case "$ARCH" in
    cnn) SHAPE=1,3,64,64 REQUESTS=${REQUESTS_CNN:-400} PROFILE=(--profile default) DTYPE=float32 ;;
    resnet18) SHAPE=1,3,224,224 REQUESTS=${REQUESTS_RESNET18:-150} PROFILE=(--profile image-classification)
      DTYPE=uint8 ;;
    *) echo "ARCHS: expected cnn and/or resnet18, got $ARCH" >&2; exit 2 ;;
  esac
  W="$D/$PHASE/$ARCH"
  mkdir -p "$W"
  "$B" gen-model --arch "$ARCH" -o "$W/m.pt" >/dev/null
  "$B" gen-trace --requests "$REQUESTS" --keys "$KEYS" --zipf "$ZIPF" --rate 0 --shape "$SHAPE" --dtype "$DTYPE" \
    -o "$W/t.jsonl" >/dev/null
  CMP=(taskset -c "$CORES" "$B" compare "$W/m.pt" --trace "$W/t.jsonl" "${PROFILE[@]}" "${MODE[@]}" --caches none --caches l1
    --caches l1,l2 "${TIERS[@]}" --no-progress --format json)
  "${CMP[@]}" >"$W/compare.json" 2>"$W/compare.err" || { tail -5 "$W/compare.err" >&2; exit 3; }
  COSTS=(taskset -c "$CORES" "$B" run "$W/m.pt" --trace "$W/t.jsonl" "${PROFILE[@]}" --caches l1,l2 "${TIERS[@]}" --no-progress
    --out "$W/costs")
  "${COSTS[@]}" >/dev/null 2>"$W/costs.err" || { tail -5 "$W/costs.err" >&2; exit 3; }
  SIM=("$B" simulate --trace "$W/t.jsonl" "${TIERS[@]}" --caches l1 --caches l1,l2 --costs "$W/costs" --format json)
  "${SIM[@]}" >"$W/simulate.json"
  echo
  echo "== $PHASE: $ARCH, $REQUESTS requests, $KEYS keys, Zipf $ZIPF (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  echo "   ${CMP[*]}" | sed "s|$D|\$D|g"
  echo "   ${COSTS[*]}" | sed "s|$D|\$D|g"
  echo "   ${SIM[*]}" | sed "s|$D|\$D|g"
  python3 - "$W/compare.json" "$W/simulate.json" "$MAX_ERROR_PCT" <<'EOF' || bad=1
import json, sys
cmp = json.load(open(sys.argv[1]))
sim = json.load(open(sys.argv[2]))
limit = float(sys.argv[3])
measured = {c["name"]: c for c in cmp["configurations"]}
print(f"   {'config':8} {'measured':>9} {'interval':>16} {'predicted':>9} {'error':>7}  {'cache µs/req':>12}"
      f"  {'computed (run/sim)':>18}")
bad = False
for c in sim["configurations"]:
    m = measured[c["name"]]
    ms, ps = m["speedup"]["value"], c["predicted"]["speedup"]
    err = 100 * (ps - ms) / ms
    bad = bad or abs(err) > limit
    interval = f"[{m['speedup']['low']:.3f}, {m['speedup']['high']:.3f}]"
    computed = sum(o["requests"] for o in m["served_by"] if o["outcome"] in ("miss", "l3_hit"))
    sim_computed = c["served_by"]["compute"] + c["served_by"]["l3"]
    print(f"   {c['name']:8} {ms:8.3f}x {interval:>16} {ps:8.3f}x {err:6.1f}%  {c['predicted']['cache_us']:12.1f}"
          f"  {computed:>8.0f}/{sim_computed:<8}")
for w in sim["warnings"]:
    print("   simulate warning:", w)
sys.exit(1 if bad else 0)
EOF
done
stop_load
done
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg); target: |error| <= ${MAX_ERROR_PCT}%"
exit "$bad"
