#!/usr/bin/env bash
# Does `diff` cry wolf? TRIES diffs of runs of identical code (one model, one
# trace; RUNS runs per side, the base runs first and the new ones after, as a
# CI job against its baseline), first alone, then under a deliberate load:
# BUSY busy loops pinned to the cores the runs are pinned to (CORES), killed on
# exit (bench/busy_load.sh). Counts the verdicts of diff's default gates (thread CPU time) and, for
# contrast, of wall-time gates on the same runs. Exits 1 when a default-gate
# REGRESSION appears under load (the target: 0 of 20).
#
#   bench/diff_stability.sh [build/inferprof]
#   env: TRIES=20 RUNS=3 REQUESTS=60 SHAPE=1,3,32,32 WARMUP=5 CORES=0 BUSY=1
#        PHASES="alone loaded" WALL_GATES=total.mean=5%,total.p50=5% ALTERNATE=0
#        BEFORE=old/inferprof (also diff the same runs with an earlier binary's
#        default gates, for a paired before/after count)
#
# Timing lives here, not in ctest: the figures depend on the machine's load.
set -euo pipefail
B=$(realpath "${1:-build/inferprof}")
TRIES=${TRIES:-20}
RUNS=${RUNS:-3}
REQUESTS=${REQUESTS:-60}
SHAPE=${SHAPE:-1,3,32,32}
WARMUP=${WARMUP:-5}
CORES=${CORES:-0}  # one core: a CI runner's share
WALL_GATES=${WALL_GATES:-total.mean=5%,total.p50=5%}
ALTERNATE=${ALTERNATE:-0}  # 1: base and new runs alternated (the README's CI recipe), not base first
BEFORE=${BEFORE:-}

D=$(mktemp -d)
source "$(dirname "$0")/busy_load.sh"
trap 'stop_load; rm -rf "$D"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$B" gen-model --arch cnn --seed 1 -o "$D/m.pt" >/dev/null
"$B" gen-trace --requests "$REQUESTS" --keys "$REQUESTS" --shape "$SHAPE" --dtype uint8 --seed 1 -o "$D/t.jsonl" >/dev/null

one_run() {
  taskset -c "$CORES" "$B" run "$D/m.pt" --trace "$D/t.jsonl" --warmup "$WARMUP" --out "$1" --no-progress >/dev/null
}

# "verdict change% [interval]" of one gate row of a diff's JSON.
describe() {
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["rows"]:
    if r["stage"] == "total" and r["clock"] == sys.argv[2] and r["metric"] == sys.argv[3]:
        iv = r["interval_pct"]
        print("%s %+.1f%% [%s]" % (r["verdict"], r["change_pct"],
              "%+.1f%%, %+.1f%%" % tuple(iv) if iv else "-"))
PY
}

# The machine's speed, new side against base (diff's speed_probe: docs/diff-and-ci.md).
probe() {
  python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["speed_probe"]["slowdown"]; print("-" if s is None else "%+.1f%%" % ((s-1)*100))' "$1"
}

bad_under_load=0
summary=()
for mode in $PHASES; do
  start_load_for "$mode"
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  declare -A count=()
  for t in $(seq "$TRIES"); do
    rm -rf "$D/runs"
    base=() new=()
    if [[ $ALTERNATE == 1 ]]; then
      # The README's CI recipe: base and new runs alternated, so drift of the machine falls on both sides.
      for i in $(seq "$RUNS"); do
        one_run "$D/runs/b$i"; base+=("$D/runs/b$i")
        one_run "$D/runs/n$i"; new+=("$D/runs/n$i")
      done
    else
      for i in $(seq "$RUNS"); do one_run "$D/runs/b$i"; base+=("$D/runs/b$i"); done
      for i in $(seq "$RUNS"); do one_run "$D/runs/n$i"; new+=("$D/runs/n$i"); done
    fi
    code=0
    "$B" diff --base "${base[@]}" --new "${new[@]}" --format json >"$D/cpu.json" || code=$?
    wcode=0
    "$B" diff --base "${base[@]}" --new "${new[@]}" --max-regression "$WALL_GATES" --format json >"$D/wall.json" ||
      wcode=$?
    case $code in 0) v=ok ;; 1) v=REGRESSION ;; 4) v=unstable ;; *) echo "diff failed (exit $code)" >&2; exit 3 ;; esac
    before_note=""
    if [[ -n $BEFORE ]]; then
      bcode=0
      "$BEFORE" diff --base "${base[@]}" --new "${new[@]}" --format json >"$D/before.json" || bcode=$?
      case $bcode in 0) bv=ok ;; 1) bv=REGRESSION ;; 4) bv=unstable ;; *) echo "diff (BEFORE) failed (exit $bcode)" >&2; exit 3 ;; esac
      count[before_$bv]=$((${count[before_$bv]:-0} + 1))
      before_note=" | before: $(describe "$D/before.json" cpu mean)"
    fi
    case $wcode in 0) w=ok ;; 1) w=REGRESSION ;; 4) w=unstable ;; *) echo "diff failed (exit $wcode)" >&2; exit 3 ;; esac
    count[$v]=$((${count[$v]:-0} + 1))
    count[wall_$w]=$((${count[wall_$w]:-0} + 1))
    printf '%-5s %2d  default: %-10s cpu.mean %s | wall gates: %-10s wall mean %s | machine %s%s\n' "$mode" "$t" "$v" \
      "$(describe "$D/cpu.json" cpu mean)" "$w" "$(describe "$D/wall.json" wall mean)" "$(probe "$D/cpu.json")" \
      "$before_note"
  done
  after=$(cut -d' ' -f1-3 /proc/loadavg)
  stop_load
  [ "$mode" = loaded ] && bad_under_load=${count[REGRESSION]:-0}
  summary+=("$(printf '%-5s  %d tries of %d+%d runs x %d requests: default gates %d REGRESSION, %d unstable, %d ok; wall gates (%s) %d REGRESSION, %d unstable, %d ok; load average %s -> %s' \
    "$mode" "$TRIES" "$RUNS" "$RUNS" "$REQUESTS" \
    "${count[REGRESSION]:-0}" "${count[unstable]:-0}" "${count[ok]:-0}" "$WALL_GATES" "${count[wall_REGRESSION]:-0}" \
    "${count[wall_unstable]:-0}" "${count[wall_ok]:-0}" "$before" "$after")")
  [[ -n $BEFORE ]] && summary+=("$(printf '%-5s  the same runs, %s default gates: %d REGRESSION, %d unstable, %d ok' "$mode" \
    "$BEFORE" "${count[before_REGRESSION]:-0}" "${count[before_unstable]:-0}" "${count[before_ok]:-0}")")
  unset count
done
echo
printf '%s\n' "${summary[@]}"
[ "$bad_under_load" -eq 0 ]
