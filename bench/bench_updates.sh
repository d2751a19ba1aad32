#!/usr/bin/env bash
# Model updates on replicas: the same trace (ResNet-18-shaped model, open loop,
# a model_update every UPDATE_MS) replayed by REPLICAS replica processes that
# share one Redis (L2 results and the model store's Redis tier), once per
# update mode, and one table: p99 over the replicas, the cross-replica p99
# spread, stalls, stale results and the version skew.
#   bench/bench_updates.sh                 # after scripts/build.sh; ~2 minutes on 2 cores
#   REPLICAS=4 REQUESTS=240 RATE=40 UPDATE_MS=2000 ARCH=resnet18 bench/bench_updates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/inferprof
REPLICAS=${REPLICAS:-4}
REQUESTS=${REQUESTS:-240}
RATE=${RATE:-40}
UPDATE_MS=${UPDATE_MS:-2000}
ARCH=${ARCH:-resnet18}
WORK=${WORK:-build/bench-updates}
mkdir -p "$WORK"

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
trap 'kill $REDIS_PID 2>/dev/null || true' EXIT
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
REDIS="redis://127.0.0.1:$PORT"

# One version per update (v1 serves first), each its own weights.
rm -rf "$WORK/store"
VERSIONS=$(python3 -c "import math; print(2 + int(($REQUESTS / $RATE * 1000) // $UPDATE_MS))")
for v in $(seq 1 "$VERSIONS"); do
  [[ -f "$WORK/$ARCH-v$v.pt" ]] || $BIN gen-model --arch "$ARCH" --seed "$v" -o "$WORK/$ARCH-v$v.pt" >/dev/null
  $BIN store put "$WORK/store" "m@v$v" "$WORK/$ARCH-v$v.pt" >/dev/null
done
SHAPE=1,16; DTYPE=float32; PROFILE=default
if [[ $ARCH != mlp ]]; then SHAPE=1,3,224,224; DTYPE=uint8; PROFILE=image-classification; fi
[[ $ARCH == cnn ]] && SHAPE=1,3,32,32
$BIN gen-trace --requests "$REQUESTS" --keys 60 --rate "$RATE" --update-every-ms "$UPDATE_MS" --model m \
  --shape "$SHAPE" --dtype "$DTYPE" -o "$WORK/requests.jsonl" >/dev/null

for mode in sync async preload; do
  redis-cli -p "$PORT" flushall >/dev/null  # every mode starts from the remote store, cold
  $BIN run m@v1 --store "$WORK/store" --store-redis "$REDIS/1" --trace "$WORK/requests.jsonl" \
    --profile "$PROFILE" --caches l1,l2 --redis "$REDIS/0" --open-loop --update "$mode" \
    --replicas "$REPLICAS" --out "$WORK/$mode" --format json >"$WORK/$mode.json"
done

python3 - "$WORK" "$REPLICAS" <<'EOF'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
print(f"{n} replicas, open loop; p50/p99 are each replica's, shown as the worst replica; spread = max - min across replicas")
print(f"{'mode':8} {'p50 (worst)':>12} {'p99 (worst)':>12} {'p99 spread':>11} {'stalled':>8} {'stall ms':>9} {'stale':>6} {'skew ms (max)':>14}")
for mode in ("sync", "async", "preload"):
    s = json.load(open(f"{work}/{mode}/replicas.json"))
    reps = [r for r in s["replicas"] if r["status"] == "ok"]
    p50 = max(r["p50_us"] for r in reps) / 1e3
    p99 = max(r["p99_us"] for r in reps) / 1e3
    stalled = sum(u["stalled"] for u in s["updates"])
    stall = sum(u["stall_ms"] for u in s["updates"])
    stale = sum(u["stale_served"] for u in s["updates"])
    skew = max((u["skew_ms"] for u in s["updates"]), default=0)
    print(f"{mode:8} {p50:10.1f}ms {p99:10.1f}ms {s['p99_spread_us']/1e3:9.1f}ms {stalled:8d} {stall:9.1f} {stale:6d} {skew:14.1f}")
EOF
