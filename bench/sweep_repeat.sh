#!/usr/bin/env bash
# Does `sweep` give the same capacities twice, and does it cost little more
# than the replays it runs? Issue 26's targets: a 2,000-request trace x 3
# cache configurations x 8 steps finishes within 2x the time of its replays,
# and each configuration's capacity (measured, and the queueing model's)
# repeats within 10% over RUNS runs. Each
# phase runs RUNS sweeps alone, then (PHASES) with BUSY busy loops pinned on
# the same cores (bench/busy_load.sh). Figures go to stdout only.
#
#   bench/sweep_repeat.sh [build/inferprof]      # ~40 minutes on 2 cores with the defaults
#   env: ARCH=cnn REQUESTS=2000 KEYS=200 RATE=80 SPEEDS=0.5:4:0.5 SLO_MS=50 RUNS=3
#        CACHES="none l1 l1,l2" REFINE=0 (sweep --refine) BATCHES= (sweep --max-batch, e.g. 1,8)
#        MEASURE_AFTER=0 (sweep --measure-after)
#        CORES=0-(nproc-1) BUSY=1 PHASES="alone loaded" KEEP=DIR (keep each sweep's JSON and --out folder there)
# After each phase, bench/sweep_model_check.py reruns the queueing model from the sweeps'
# service_times.csv and prints their capacities at one common service pace.
# Batching's capacity (docs/batching.md#capacity-what-batching-buys):
#   CACHES=none BATCHES=1,8 REQUESTS=1000 SPEEDS=1:4:0.5 SLO_MS=100 bench/sweep_repeat.sh
set -euo pipefail
B=${1:-build/inferprof}
ARCH=${ARCH:-cnn}
REQUESTS=${REQUESTS:-2000}
KEYS=${KEYS:-200}
RATE=${RATE:-80}
SPEEDS=${SPEEDS:-0.5:4:0.5}
SLO_MS=${SLO_MS:-50}
RUNS=${RUNS:-3}
REFINE=${REFINE:-0}
MEASURE_AFTER=${MEASURE_AFTER:-0}
BATCH_ARGS=()
if [[ -n ${BATCHES:-} ]]; then BATCH_ARGS=(--max-batch "$BATCHES"); fi
read -r -a CACHES <<<"${CACHES:-none l1 l1,l2}"
source "$(dirname "$0")/busy_load.sh"
case "$ARCH" in
  cnn) SHAPE=1,3,64,64 ;;
  mlp) SHAPE=1,16 ;;
  resnet18) SHAPE=1,3,224,224 ;;
  *) echo "ARCH: expected cnn, mlp or resnet18, got $ARCH" >&2; exit 2 ;;
esac
D=$(mktemp -d)
trap 'stop_load; if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP" && cp -r "$D"/*-[0-9]* "$KEEP"/ 2>/dev/null; fi; rm -rf "$D"' EXIT
trap 'exit 130' INT TERM

"$B" gen-model --arch "$ARCH" -o "$D/m.pt" >/dev/null
"$B" gen-trace --requests "$REQUESTS" --keys "$KEYS" --zipf 1.0 --rate "$RATE" --shape "$SHAPE" -o "$D/t.jsonl" \
  >/dev/null
CACHE_ARGS=()
for c in "${CACHES[@]}"; do CACHE_ARGS+=(--caches "$c"); done

echo "sweep $ARCH, $REQUESTS requests at $RATE req/s, speeds $SPEEDS (refine $REFINE), caches ${CACHES[*]}," \
  "batches ${BATCHES:-1}, first $MEASURE_AFTER unmeasured, p99 <= $SLO_MS ms"
for phase in $PHASES; do
  start_load_for "$phase"
  for run in $(seq "$RUNS"); do
    /usr/bin/time -f "%e" -o "$D/time" taskset -c "$CORES" "$B" sweep "$D/m.pt" --trace "$D/t.jsonl" \
      --speeds "$SPEEDS" --slo-ms "$SLO_MS" --refine "$REFINE" --measure-after "$MEASURE_AFTER" "${CACHE_ARGS[@]}" "${BATCH_ARGS[@]}" --no-progress --format json \
      --out "$D/$phase-$run" --service-times >"$D/$phase-$run.json"
    python3 - "$D/$phase-$run.json" "$(cat "$D/time")" "$phase" "$run" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
steps = sum(len(c["steps"]) for c in r["configurations"])
def model(c):
    m = c.get("queueing_model")
    if not m: return ""
    rng = f' [{m["capacity_low_rps"]:.1f}, {m["capacity_high_rps"]:.1f}] at pace {m["pace_min"]:.2f}-{m["pace_max"]:.2f}' if "pace_min" in m else ""
    return f', model {m.get("capacity_rps", 0):.1f}{"+" if m["capacity_at_least"] else ""}{rng}'
caps = "  ".join(f'{c["name"]} {c.get("capacity_rps", 0):.1f}{"+" if c["capacity_at_least"] else ""}{model(c)} ({len(c["steps"])} steps, '
                 f'most served {max(s["achieved_rps"] for s in c["steps"]):.1f}/s)'
                 for c in r["configurations"])
# The machine's pace in this sweep: the first configuration's compute per request at its first step.
pace = r["configurations"][0]["steps"][0]["stage_mean_us"]["compute"] / 1000
print(f'{sys.argv[3]} run {sys.argv[4]}: process {float(sys.argv[2]):.1f} s, replays {r["replay_s"]:.1f} s '
      f'(x{float(sys.argv[2]) / r["replay_s"]:.2f}), {steps} steps; {r["configurations"][0]["name"]} computes '
      f'{pace:.2f} ms/request at the first step; capacity req/s: {caps}')
PY
  done
  python3 - "$D" "$phase" "$RUNS" <<'PY'
import json, sys
d, phase, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
docs = [json.load(open(f"{d}/{phase}-{k}.json")) for k in range(1, runs + 1)]
def spread(caps):
    return max(caps) / min(caps) if min(caps) > 0 else float("inf")
for i, c in enumerate(docs[0]["configurations"]):
    caps = [doc["configurations"][i].get("capacity_rps", 0) for doc in docs]
    line = f'{phase}: {c["name"]}: capacity {min(caps):.1f}..{max(caps):.1f} req/s, max/min {spread(caps):.3f}'
    models = [doc["configurations"][i].get("queueing_model", {}).get("capacity_rps", 0) for doc in docs]
    if any(models):
        line += f'; queueing model {min(models):.1f}..{max(models):.1f} req/s, max/min {spread(models):.3f}'
        # Each sweep's model capacity inside another sweep's range over its steps' pace.
        qm = [doc["configurations"][i].get("queueing_model", {}) for doc in docs]
        if all("capacity_low_rps" in q for q in qm):
            held = sum(1 for a in range(runs) for b in range(runs) if a != b and
                       qm[b]["capacity_low_rps"] <= models[a] <= qm[b]["capacity_high_rps"])
            line += f'; inside the others\' pace ranges {held}/{runs * (runs - 1)}'
    print(line)
PY
  # The model rerun outside the tool from each sweep's service_times.csv, and
  # the capacities with every sweep's services at the first one's total.
  dirs=()
  for run in $(seq "$RUNS"); do dirs+=("$D/$phase-$run"); done
  python3 "$(dirname "$0")/sweep_model_check.py" "${dirs[@]}" | sed "s|$D/||"
  stop_load
done
