#!/usr/bin/env bash
# Installs the Debian packages inferprof builds, tests and demos with.
# Idempotent: only missing packages are fetched. Needs root (or sudo).
# --test adds what only the tests use: chromium, which loads report.html
# headless (test/e2e/test_cli_html.cpp), and python3-pil, the independent
# reference the image tests compare decoding and resizing with byte for byte;
# iproute2, for the network namespaces of test/e2e/netns_group.sh, and
# python3-yaml, which reads deploy/kubernetes/ in its test (each test
# skips without its package); the demo needs none of them.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git python3
  libtorch-dev
  libcli11-dev libfmt-dev libsimdjson-dev libtomlplusplus-dev
  libhiredis-dev liblmdb-dev libxxhash-dev libcurl4-openssl-dev libssl-dev libzstd-dev
  libjpeg62-turbo-dev libpng-dev libwebp-dev
  libsentencepiece-dev sentencepiece
  clang-format
  doctest-dev libbenchmark-dev
  redis-server
)
if [[ ${1:-} == --test ]]; then PACKAGES+=(chromium python3-pil iproute2 python3-yaml); fi

# --test also fetches the Kubernetes manifest's schema check (npm, pinned by
# its lockfile). Without npm or its registry that check skips; never a failure.
VALIDATE="$(cd "$(dirname "$0")/.." && pwd)/deploy/kubernetes/validate"
if [[ ${1:-} == --test && ! -d $VALIDATE/node_modules ]] && command -v npm >/dev/null; then
  (cd "$VALIDATE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
    echo "install-deps: npm ci failed in $VALIDATE: ctest deploy-manifest-schema will skip"
fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
