#!/usr/bin/env bash
# Installs what is missing, builds, checks the formatting (.clang-format), runs every test (unit + end-to-end) through
# ctest, then every fuzz target for INFERPROF_FUZZ_SECONDS (default 30; 0 skips)
# with a fixed seed, so that a finding comes from a code change, never chance.
# Arguments go to ctest; given any, the fuzz run is skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
bash scripts/build.sh
bash scripts/check-format.sh
BUILD_DIR=${BUILD_DIR:-build}
(cd "$BUILD_DIR" && ctest --output-on-failure -j"$(nproc)" "$@")
if (($# == 0)) && [[ ${INFERPROF_FUZZ_SECONDS:-30} != 0 ]]; then
  FUZZ_SEED=${INFERPROF_FUZZ_SEED:-1} BUILD_DIR=$BUILD_DIR bash scripts/fuzz.sh "${INFERPROF_FUZZ_SECONDS:-30}"
fi
