#!/usr/bin/env bash
# Synthesises a local demo image set (no downloads): pictures at several sizes
# up to 4K as JPEG and PNG, and a trace that names them, for
# --profile image-classification-jpeg.
#   scripts/make-demo-images.sh [OUT_DIR]   (default: demo-images/)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-demo-images}
BIN=${INFERPROF:-build/inferprof}
[[ -x $BIN ]] || bash scripts/build.sh
"$BIN" gen-images --out "$OUT" --sizes 320x240,640x480,1280x720,1920x1080,3840x2160 --formats jpeg,png --count 2
# One request per picture, then each JPEG again (cache hits for compare).
{
  i=0
  for f in "$OUT"/*.jpg "$OUT"/*.png "$OUT"/*.jpg; do
    i=$((i + 1))
    printf '{"id": %d, "key": "%s", "input": {"image": "%s"}}\n' "$i" "$(basename "$f")" "$(basename "$f")"
  done
} > "$OUT/requests.jsonl"
echo "wrote $OUT/requests.jsonl ($(wc -l < "$OUT/requests.jsonl") requests)"
echo "try: $BIN gen-model --arch resnet18 -o resnet18.pt && $BIN run resnet18.pt --trace $OUT/requests.jsonl --profile image-classification-jpeg"
