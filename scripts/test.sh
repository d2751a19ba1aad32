#!/usr/bin/env bash
# Installs what is missing, builds, and runs every test (unit + end-to-end) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
