#!/usr/bin/env bash
# The end-to-end demo: install, build, make a ResNet-18-shaped model and an
# image-request trace, show where the latency goes, then measure what each
# cache tier buys (L2 and L3 on a Redis server this script starts on a free
# loopback port, unless INFERPROF_REDIS_URL names one).
#   scripts/demo.sh          # first time: ~5 minutes of build; then ~2 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BIN=build/inferprof
REQUESTS=${DEMO_REQUESTS:-120}
mkdir -p demo
[[ -f demo/resnet18.pt ]] || $BIN gen-model --arch resnet18 --seed 1 -o demo/resnet18.pt
$BIN gen-trace --requests "$REQUESTS" --keys 40 --zipf 1.0 --rate 20 \
  --shape 1,3,224,224 --dtype uint8 -o demo/requests.jsonl

echo; echo "== inferprof run: where the latency goes =="
$BIN run demo/resnet18.pt --trace demo/requests.jsonl --profile image-classification \
  --out demo/report --no-progress

REDIS_URL=${INFERPROF_REDIS_URL:-}
if [[ -z "$REDIS_URL" ]]; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
    >demo/redis.log 2>&1 &
  REDIS_PID=$!
  trap 'kill $REDIS_PID 2>/dev/null || true' EXIT
  for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.05; done
  REDIS_URL="redis://127.0.0.1:$PORT/0"
fi

echo; echo "== inferprof compare: what each cache tier buys (L2/L3 on $REDIS_URL) =="
$BIN compare demo/resnet18.pt --trace demo/requests.jsonl --profile image-classification \
  --redis "$REDIS_URL" --verify=0.25 --out demo/compare --flamegraph-diff --no-progress "$@"
