#!/usr/bin/env bash
# A sync model update on `run --replicas 2`, looped: is it live on both replicas, and does every request after
# the event's trace line (and none before it) get the new version? Closed loop (each replica at its own pace,
# where the update used to reach a replica after its last request) and open loop; alone and under one busy loop
# (busy_load.sh). Prints, per phase and loop mode, the runs live on 2/2 and the rows served by the wrong version.
#   bench/sync_update_replicas.sh [BIN]          # after scripts/build.sh; RUNS=50 by default (~3 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build/inferprof}
RUNS=${RUNS:-50}
WORK=${WORK:-build/bench-sync-update}
source bench/busy_load.sh
rm -rf "$WORK" && mkdir -p "$WORK"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
trap 'stop_load; kill $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done

for v in 1 2; do
  "$BIN" gen-model --arch mlp --seed "$v" -o "$WORK/v$v.pt" >/dev/null
  "$BIN" store put "file://$WORK/models" "m@v$v" "$WORK/v$v.pt" >/dev/null
done
# 30 requests at 2 ms, the update (line 31), 30 more.
python3 - "$WORK/t.jsonl" <<'PY'
import sys
row = '{{"id": {0}, "ts_ms": {1}, "key": "k{2}", "input": {{"shape": [1, 16], "dtype": "float32", "seed": {2}}}}}'
lines = [row.format(i, 2 * i, i % 5) for i in range(30)]
lines.append('{"event": "model_update", "model": "m", "version": "v2", "ts_ms": 59}')
lines += [row.format(i, 2 * i, i % 5) for i in range(30, 60)]
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY

for phase in $PHASES; do
  start_load_for "$phase"
  for loop in closed open; do
    extra=()
    [[ $loop == open ]] && extra=(--open-loop)
    live=0 wrong=0
    for i in $(seq "$RUNS"); do
      out="$WORK/r-$phase-$loop-$i"
      "$BIN" run m@v1 --store "file://$WORK/models" --trace "$WORK/t.jsonl" --caches l1,l2 \
        --redis "redis://127.0.0.1:$PORT" --update sync --replicas 2 --warmup 1 "${extra[@]}" \
        --out "$out" --format json >/dev/null 2>"$out.err"
      read -r l w < <(python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
live = json.load(open(out + "/replicas.json"))["updates"][0]["replicas_live"]
wrong = sum((int(r["line"]) > 31) != (r["model_version"] == "v2")
            for k in (0, 1) for r in csv.DictReader(open(f"{out}/replica-{k}/requests.csv")))
print(live, wrong)
PY
      )
      [[ $l == 2 ]] && live=$((live + 1))
      wrong=$((wrong + w))
    done
    echo "$phase $loop: live on 2/2 in $live of $RUNS runs; rows served by the wrong version: $wrong"
  done
  stop_load
done
