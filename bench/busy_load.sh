# Deliberate load for the accuracy benches (sourced, not run): BUSY busy-loop
# processes pinned with taskset on CORES, the cores the measured commands are
# pinned on, so that they compete for exactly those cores. The caller's EXIT
# trap must call stop_load, so that no loop outlives the bench.
#   env: BUSY=1  CORES=0-(nproc-1)  PHASES="alone loaded"
BUSY=${BUSY:-1}
CORES=${CORES:-0-$(($(nproc) - 1))}
PHASES=${PHASES:-alone loaded}
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed to pin the load" >&2; exit 2; }
LOAD_PIDS=()

# start_load_for PHASE: starts the loops when PHASE is "loaded".
start_load_for() {
  [[ $1 == loaded ]] || return 0
  for _ in $(seq "$BUSY"); do
    taskset -c "$CORES" sh -c 'while :; do :; done' &
    LOAD_PIDS+=("$!")
  done
}

stop_load() {
  for p in "${LOAD_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${LOAD_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  LOAD_PIDS=()
}
