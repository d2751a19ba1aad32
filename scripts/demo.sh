#!/usr/bin/env bash
# The end-to-end demo: an image service. A ResNet-18-shaped model behind JPEG
# decode + resize + crop + normalise (profiles/image-classification-jpeg.toml),
# fed a Zipf trace over a folder of synthesised 4K and 1080p JPEGs, so keys
# repeat. It inspects the model against the profile, shows where a request's
# time goes, then measures what each cache tier buys: L3 holds the
# preprocessed tensor, so an L3 hit skips decode + resize (the model still
# runs); L1/L2 hold results (nothing runs). L2 and L3 go on a Redis server
# this script starts on a free loopback port, unless INFERPROF_REDIS_URL names one.
#   scripts/demo.sh          # first time: ~3 minutes on 2 idle cores, mostly the build; then ~30 s
set -euo pipefail
cd "$(dirname "$0")/.."
# The executable and what it loads (the pipeline plugin, the tokenizer library): no tests.
BUILD_TARGETS=inferprof bash scripts/build.sh
BIN=build/inferprof
REQUESTS=${DEMO_REQUESTS:-60}
PROFILE=image-classification-jpeg
mkdir -p demo
[[ -f demo/resnet18.pt ]] || $BIN gen-model --arch resnet18 --seed 1 -o demo/resnet18.pt
# 4K and 1080p photographs-to-be: decoding and shrinking them is a large share of a request.
[[ -d demo/images ]] || $BIN gen-images --out demo/images --sizes 3840x2160,1920x1080 --formats jpeg --count 4 >/dev/null
$BIN gen-trace --images demo/images --requests "$REQUESTS" --zipf 1.0 --rate 20 -o demo/requests.jsonl

echo; echo "== inferprof inspect: what the model takes, and whether the profile gives it =="
$BIN inspect demo/resnet18.pt --profile $PROFILE

echo; echo "== inferprof run: where the latency goes =="
$BIN run demo/resnet18.pt --trace demo/requests.jsonl --profile $PROFILE --out demo/report --no-progress

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
$BIN compare demo/resnet18.pt --trace demo/requests.jsonl --profile $PROFILE \
  --redis "$REDIS_URL" --verify=0.25 --out demo/compare --flamegraph-diff --no-progress "$@"

echo; echo "== why L3 pays here =="
python3 - demo/report/summary.json demo/compare/compare.json <<'PY'
import json, sys
run, cmp_ = (json.load(open(p)) for p in sys.argv[1:3])
ms = lambda us: us / 1000.0
st = run["stages"]
inp, pre, comp = (ms(st[s]["mean_us"]) for s in ("input", "preprocess", "compute"))
print(f"run, no caches: {ms(run['total']['mean_us']):.1f} ms per request = reading the JPEG {inp:.1f} ms + "
      f"decode, resize 256, crop 224, normalise {pre:.1f} ms + the model {comp:.1f} ms.")
rows = {c["name"]: c for c in cmp_["configurations"]}
if "none" in rows and "l3" in rows:
    l3 = rows["l3"]
    tier = next((t for t in l3.get("caches", []) if t["tier"] == "l3"), None)
    hit = tier["hits"] / tier["lookups"] if tier and tier["lookups"] else 0.0
    print(f"compare, L3 alone: {hit:.0%} of requests find their preprocessed 1x3x224x224 tensor in L3 and skip "
          f"reading and preprocessing (about {inp + pre:.1f} ms each; the model still runs), so the mean goes "
          f"from {ms(rows['none']['mean_us']):.1f} to {ms(l3['mean_us']):.1f} ms: {l3['speedup']['value']:.2f}x.")
    if "cpu_mean_us" in l3 and "cpu_mean_us" in rows["none"]:
        print(f"CPU time per request, which load on the machine does not stretch: {ms(rows['none']['cpu_mean_us']):.1f} "
              f"ms without caches, {ms(l3['cpu_mean_us']):.1f} ms with L3.")
    total = ms(run["total"]["mean_us"])
    expected = total / max(total - hit * (inp + pre), 1e-9)
    print(f"the run's stage means predict 1 / (1 - {hit:.0%} x {inp + pre:.1f} / {total:.1f}) = {expected:.2f}x "
          f"(an upper bound: it leaves out L3's own lookups and inserts, which `simulate --costs` charges, and the "
          f"run was a separate replay while compare's figure is paired request by request).")
    print("L1/L2 hits skip the model too (results cached), so they win more where keys repeat exactly; L3 is what "
          "is left when results cannot be reused (a new model version, outputs that differ per request).")
PY
