#!/usr/bin/env bash
# The CI gate of docs/diff-and-ci.md ("compare two models or profiles in
# lockstep"), tried TRIES times alone and under load:
#   (a) a real change: image-classification-jpeg against the same profile
#       resizing the shorter side to 512 instead of 256 (more preprocessing
#       CPU per request); target: flagged (exit 1) in >= 9 of 10;
#   (b) no change: the profile against itself (two pipelines, the same work);
#       target: flagged in 0 of 10;
#   (c) model against model: a ResNet-18-shaped model against the small CNN
#       on the same pictures; target: the CNN read "faster" in 10 of 10.
# (a) and (b) run the recipe's command: --gate GATES --precision PRECISION.
# Figures go to stdout only; the exit status is 1 when a target is missed.
#
#   bench/compare_gate.sh [build/inferprof]
#   env: TRIES=10  REQUESTS=60  SIZES=1920x1080,1280x720  GATES=total.cpu.mean=5%  PRECISION=3  MAX_TIME=120
#        CORES=0-(nproc-1)  BUSY=2  PHASES="alone loaded"
set -euo pipefail
B=$(realpath "${1:-build/inferprof}")
TRIES=${TRIES:-10}
REQUESTS=${REQUESTS:-60}
SIZES=${SIZES:-1920x1080,1280x720}
GATES=${GATES:-total.cpu.mean=5%}
PRECISION=${PRECISION:-3}
MAX_TIME=${MAX_TIME:-120}
BUSY=${BUSY:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/busy_load.sh"

D=$(mktemp -d)
trap 'stop_load; rm -rf "$D"' EXIT
trap 'exit 130' INT TERM

"$B" gen-model --arch cnn -o "$D/cnn.pt" >/dev/null
"$B" gen-model --arch resnet18 -o "$D/resnet18.pt" >/dev/null
"$B" gen-images --out "$D/pictures" --sizes "$SIZES" --formats jpeg --count 3 >/dev/null
"$B" gen-trace --images "$D/pictures" --requests "$REQUESTS" --rate 0 -o "$D/t.jsonl" >/dev/null 2>&1
P256="$HERE/../profiles/image-classification-jpeg.toml"
sed 's/^name = .*/name = "resize-512"/; s/^size = 256 /size = 512 /' "$P256" >"$D/resize-512.toml"
grep -q '^size = 512 ' "$D/resize-512.toml" || { echo "the profile's resize size was not found" >&2; exit 3; }

GATE=(--gate "$GATES" --precision "$PRECISION" --max-time "$MAX_TIME")
CMP=(taskset -c "$CORES" "$B" compare "$D/cnn.pt" --trace "$D/t.jsonl" --no-progress --format json)
# One compare: its JSON in $1, its exit status in $1.rc (0, 1 and 4 are verdicts; others stop the bench).
try() {
  local out=$1
  shift
  local rc=0
  "$@" >"$out" 2>"$D/err" || rc=$?
  echo "$rc" >"$out.rc"
  if [[ $rc != 0 && $rc != 1 && $rc != 4 ]]; then
    tail -5 "$D/err" >&2
    echo "failed ($rc): $*" >&2
    exit 3
  fi
}

for PHASE in $PHASES; do
  start_load_for "$PHASE"
  echo "== $PHASE: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for i in $(seq "$TRIES"); do
    try "$D/a-$PHASE-$i.json" "${CMP[@]}" --profile "$P256" --profile "$D/resize-512.toml" "${GATE[@]}"
    try "$D/b-$PHASE-$i.json" "${CMP[@]}" --profile "$P256" --profile "$P256" "${GATE[@]}"
    try "$D/c-$PHASE-$i.json" taskset -c "$CORES" "$B" compare "$D/resnet18.pt" --model "$D/cnn.pt" --trace "$D/t.jsonl" \
      --profile "$P256" --no-progress --format json
    echo "  try $i/$TRIES done" >&2
  done
  cut -d' ' -f1-3 /proc/loadavg >"$D/load-$PHASE"
  stop_load
done

echo "compare --gate: $TRIES tries per phase, busy loops: $BUSY on cores $CORES; $REQUESTS requests over $SIZES JPEGs"
echo "(a),(b): compare cnn.pt --trace t.jsonl --profile image-classification-jpeg --profile {resize-512,itself} ${GATE[*]}"
echo "(c): compare resnet18.pt --model cnn.pt --trace t.jsonl --profile image-classification-jpeg"
python3 - "$D" "$TRIES" $PHASES <<'EOF'
import json, sys
d, tries, phases = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(kind, phase, i):
    return json.load(open(f"{d}/{kind}-{phase}-{i}.json")), int(open(f"{d}/{kind}-{phase}-{i}.json.rc").read())
def gate_text(doc):
    out = []
    for g in doc["gates"]:
        lo, hi, base = g.get("delta_low_us"), g.get("delta_high_us"), g["base_us"]
        ch = 100 * (g["now_us"] - base) / base if base else 0
        iv = f" [{100 * lo / base:+.1f}, {100 * hi / base:+.1f}]" if lo is not None and base else ""
        out.append(f"{g['stage']}.{g['clock']} {ch:+.1f}%{iv} {g['verdict']}")
    return "; ".join(out)
bad = False
for phase in phases:
    print(f"\n{phase} (load average {open(f'{d}/load-{phase}').read().strip()})")
    flagged = {"a": 0, "b": 0}
    for kind in ("a", "b"):
        for i in range(1, tries + 1):
            doc, rc = load(kind, phase, i)
            flagged[kind] += rc == 1
            passes = doc.get("precision", {}).get("passes", doc["repeat"])
            print(f"  ({kind}) try {i:2}: exit {rc}, {passes} passes, {gate_text(doc)}")
    faster = 0
    for i in range(1, tries + 1):
        doc, rc = load("c", phase, i)
        c = doc["configurations"][1]
        faster += c["verdict"] == "faster"
        s = c["speedup"]
        print(f"  (c) try {i:2}: cnn.pt {s['value']:.2f}x [{s['low']:.2f}, {s['high']:.2f}] {c['verdict']}")
    need_a = -(-9 * tries // 10)
    ok_a, ok_b, ok_c = flagged["a"] >= need_a, flagged["b"] == 0, faster == tries
    bad = bad or not (ok_a and ok_b and ok_c)
    print(f"  (a) resize 512 flagged {flagged['a']}/{tries} (target >= {need_a}) {'ok' if ok_a else 'FAIL'}")
    print(f"  (b) identical flagged {flagged['b']}/{tries} (target 0) {'ok' if ok_b else 'FAIL'}")
    print(f"  (c) the faster model found {faster}/{tries} (target {tries}) {'ok' if ok_c else 'FAIL'}")
sys.exit(1 if bad else 0)
EOF
