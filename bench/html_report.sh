#!/usr/bin/env bash
# Issue 26's report.html target: a 10,000-request compare's report.html is
# under 2 MB and opens in chromium in under 2 s. Makes an MLP and a trace,
# runs `compare --caches none --caches l1 --out`, prints the page's size, then
# opens it in headless chromium ROUNDS times per phase, each round paired with
# a blank page (interleaved):
#   load_ms  the page's own figure: performance.now() at its window load event
#            (navigation to every frame loaded, scripts run), from data-load-ms;
#   wall     the whole browser process (start-up included) for the report,
#            and the same less the blank page's (what the report adds).
# Figures go to stdout.
#
#   bench/html_report.sh [build/inferprof]
#   env: REQUESTS=10000  ROUNDS=5  BUSY=1  CORES=0-(nproc-1)  PHASES="alone loaded"
set -euo pipefail
B=${1:-build/inferprof}
REQUESTS=${REQUESTS:-10000}
ROUNDS=${ROUNDS:-5}
source "$(dirname "$0")/busy_load.sh"
BROWSER=$(command -v chromium || command -v chromium-browser || true)
[[ -n $BROWSER ]] || { echo "chromium is needed (scripts/install-deps.sh --test)" >&2; exit 2; }

D=$(mktemp -d)
trap 'stop_load; rm -rf "$D"' EXIT
trap 'exit 130' INT TERM

"$B" gen-model --arch mlp -o "$D/m.pt" >/dev/null
"$B" gen-trace --requests "$REQUESTS" --keys 1000 --zipf 1.0 --rate 0 -o "$D/t.jsonl" >/dev/null
"$B" compare "$D/m.pt" --trace "$D/t.jsonl" --caches none --caches l1 --out "$D/c" --no-progress >/dev/null
PAGE="$D/c/report.html"
echo "report.html of a ${REQUESTS}-request compare (none, l1): $(stat -c %s "$PAGE") bytes"
echo "<html><body>blank</body></html>" >"$D/blank.html"

# open PAGE: prints "<wall seconds> <data-load-ms or ->" for one headless load.
open_page() {
  local prof="$D/profile-$RANDOM"
  local start end
  start=$(date +%s.%N)
  taskset -c "$CORES" "$BROWSER" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --allow-file-access-from-files --user-data-dir="$prof" --virtual-time-budget=3000 \
    --dump-dom "file://$1" >"$D/dom.html" 2>/dev/null
  end=$(date +%s.%N)
  rm -rf "$prof"
  local ms
  ms=$(grep -o 'data-load-ms="[0-9]*"' "$D/dom.html" | grep -o '[0-9]*' || echo -)
  echo "$(echo "$end - $start" | bc) $ms"
}

for phase in $PHASES; do
  start_load_for "$phase"
  for r in $(seq "$ROUNDS"); do
    read -r wall ms < <(open_page "$PAGE")
    read -r blank _ < <(open_page "$D/blank.html")
    printf '%s round %d: load_ms %s · wall %.2f s (blank page %.2f s, the report adds %.2f s)\n' \
      "$phase" "$r" "$ms" "$wall" "$blank" "$(echo "$wall - $blank" | bc)"
  done
  stop_load
done
