#!/usr/bin/env bash
# Runs every fuzz target (fuzz/*.cpp) over its seed corpus and past findings,
# then mutated inputs for SECONDS each, NPROC targets at a time.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default 30 s, all targets)
# BUILD_DIR (default build-asan: configure it with -DINFERPROF_SANITIZE=ON)
# must already be configured; the targets are built here. Findings (inputs
# that crashed, hung, or made a reader throw something other than
# inferprof::Error) go to $BUILD_DIR/fuzz-findings/; the exit status is 1 then.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-asan}
SECONDS_EACH=${1:-30}
shift || true
cmake --build "$BUILD_DIR" -j"$(nproc)" --target fuzz_all >/dev/null
if (($# == 0)); then  # every target this checkout builds
  set -- $(cd "$BUILD_DIR/fuzz" && ls fuzz_* | sed 's/^fuzz_//')
fi

# A sanitizer report is a finding: stop there, with the stack (abort, so that the
# driver saves the input). Allocations over
# 2 GiB are reported too (a length field trusted blindly), rather than taking
# the machine's memory.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:max_allocation_size_mb=2048:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:abort_on_error=1:print_stacktrace=1}
findings="$BUILD_DIR/fuzz-findings"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run_one() {
  local t=$1 inputs=(fuzz/corpus/"$1")
  [[ -d fuzz/regressions/$t ]] && inputs+=(fuzz/regressions/"$t")
  # FUZZ_SEED fixes the mutation sequence (CI: a run that can only fail on a change, not on chance).
  if "$BUILD_DIR/fuzz/fuzz_$t" --seconds "$SECONDS_EACH" --timeout 20 --findings "$findings" \
      ${FUZZ_SEED:+--seed "$FUZZ_SEED"} "${inputs[@]}" \
      >"$logs/$t.log" 2>&1; then
    tail -n 1 "$logs/$t.log"
  else
    echo "fuzz_$t: FAILED"; tail -n 60 "$logs/$t.log"; return 1
  fi
}
export -f run_one
export BUILD_DIR SECONDS_EACH findings logs FUZZ_SEED
printf '%s\n' "$@" | xargs -P "$(nproc)" -I{} bash -c 'run_one {}'
