#!/usr/bin/env bash
# The end-to-end demo: install, build, make a ResNet-18-shaped model and an
# image-request trace, and show where the latency goes.
#   scripts/demo.sh            # ~3 minutes the first time (build), then seconds
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
BIN=build/inferprof
mkdir -p demo
[[ -f demo/resnet18.pt ]] || $BIN gen-model --arch resnet18 --seed 1 -o demo/resnet18.pt
$BIN gen-trace --requests ${DEMO_REQUESTS:-200} --keys 50 --zipf 1.0 --rate 20 \
  --shape 1,3,224,224 --dtype uint8 -o demo/requests.jsonl
$BIN run demo/resnet18.pt --trace demo/requests.jsonl --profile image-classification \
  --out demo/report "$@"
