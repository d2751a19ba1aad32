#!/usr/bin/env bash
# Installs what is missing, then configures and builds inferprof in build/.
# Used by demo.sh and test.sh; safe to run again (incremental).
# BUILD_TARGETS="inferprof": only those targets (the demo's: the executable,
# which brings the pipeline plugin and the tokenizer library); unset: all.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
# ccache, when the machine has it, makes rebuilds across checkouts cheap.
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${LAUNCHER[@]}" ${CMAKE_ARGS:-} >/dev/null
TARGETS=()
for t in ${BUILD_TARGETS:-}; do TARGETS+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"$(nproc)" "${TARGETS[@]}"
