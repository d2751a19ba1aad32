#!/usr/bin/env bash
# inferprof's eviction policies against libCacheSim (the reference they follow),
# on libCacheSim's bundled block-I/O trace (data/cloudPhysicsIO: 113,872
# requests, 48,974 keys), entry-count caches (object sizes ignored):
#  1. miss counts per policy at 1k/5k/10k/25k entries, side by side: the
#     deterministic policies must be equal, W-TinyLFU within 0.005 miss ratio;
#  2. whole-process time of 5 policies x 4 sizes on the trace repeated
#     REPEAT times (2.28 M requests by default), both reading a binary trace
#     (libCacheSim: oracleGeneral, the bundled .bin concatenated; inferprof:
#     .iptrace converted from the bundled CSV repeated), both with THREADS
#     threads, paired and interleaved: RUNS rounds of (libCacheSim, inferprof)
#     in alternating order, in each phase of PHASES ("loaded": BUSY busy loops
#     pinned on the same cores, bench/busy_load.sh).
#
#   bench/policies_vs_libcachesim.sh LIBCACHESIM_DIR [build/inferprof]
#   env: REPEAT=20  RUNS=5  THREADS=2  PHASES="alone loaded"  BUSY=1  CORES=0-(nproc-1)
#
# LIBCACHESIM_DIR: a checkout of github.com/1a1a11a/libCacheSim with cachesim
# built in _build/bin; its main.c must print each cache's miss count (a
# print-only patch: ", misses %lld" after the byte miss ratio) for part 1.
set -euo pipefail
L=${1:?usage: $0 LIBCACHESIM_DIR [build/inferprof]}
B=${2:-build/inferprof}
REPEAT=${REPEAT:-20}
RUNS=${RUNS:-5}
THREADS=${THREADS:-2}
CACHESIM=$L/_build/bin/cachesim
source "$(dirname "$0")/busy_load.sh"
D=$(mktemp -d)
trap 'stop_load; rm -rf "$D"' EXIT
POLICIES=(lru fifo lfu clock sieve s3fifo arc wtinylfu 2q slru)

echo "== 1. miss counts on cloudPhysicsIO (113,872 requests), entries"
(cd "$D" && "$CACHESIM" "$L/data/cloudPhysicsIO.vscsi" vscsi "$(IFS=,; echo "${POLICIES[*]}")" 1000,5000,10000,25000 \
  --ignore-obj-size 1 --num-thread "$THREADS" 2>/dev/null) | grep misses |
  awk '{print $5+0, $NF}' > "$D/ref.txt"
"$B" simulate --trace "$L/data/cloudPhysicsIO.csv" --csv-columns ts=time,key=lbn \
  --policies "$(IFS=,; echo "${POLICIES[*]}")" --sizes 1000,5000,10000,25000 --format csv > "$D/ours.csv"
printf '%-9s %7s %10s %10s %9s\n' policy size libCacheSim inferprof "Δ ratio"
i=0
while IFS=, read -r tier policy size _ _ lookups hits _; do
  [[ $tier == tier ]] && continue
  read -r refsize refmiss < <(sed -n "$((i + 1))p" "$D/ref.txt")
  ours=$((lookups - hits))
  printf '%-9s %7s %10s %10s %+9.5f\n' "$policy" "$size" "$refmiss" "$ours" "$(echo "($ours - $refmiss) / $lookups" | bc -l)"
  i=$((i + 1))
done < "$D/ours.csv"

echo "== 2. whole process, 5 policies x 4 sizes, trace x$REPEAT"
for _ in $(seq "$REPEAT"); do cat "$L/data/cloudPhysicsIO.oracleGeneral.bin"; done > "$D/t.oracleGeneral.bin"
{ head -1 "$L/data/cloudPhysicsIO.csv"; for _ in $(seq "$REPEAT"); do tail -n +2 "$L/data/cloudPhysicsIO.csv"; done; } > "$D/t.csv"
"$B" convert "$D/t.csv" --csv-columns ts=time,key=lbn -o "$D/t.iptrace" > /dev/null
export D CACHESIM THREADS B
ref() { (cd "$D" && "$CACHESIM" t.oracleGeneral.bin oracleGeneral lru,s3fifo,sieve,arc,wtinylfu \
  1000,5000,10000,25000 --ignore-obj-size 1 --num-thread "$THREADS" > /dev/null 2>&1); }
ours() { "$B" simulate --trace "$D/t.iptrace" --policies lru,s3fifo,sieve,arc,wtinylfu --sizes 1k,5k,10k,25k \
  --curve-threads "$THREADS" --format csv > /dev/null; }
# "WALL CPU" seconds of one whole process (CPU: user + system, all threads).
secs() { /usr/bin/time -f '%e %U %S' -o "$D/time" "$@"; awk '{print $1, $2 + $3}' "$D/time"; }
export -f ref ours
for phase in $PHASES; do
  start_load_for "$phase"
  echo "-- $phase (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  for r in $(seq "$RUNS"); do
    if ((r % 2)); then a=$(secs bash -c ref); b=$(secs bash -c ours); else b=$(secs bash -c ours); a=$(secs bash -c ref); fi
    read -r aw ac <<< "$a"
    read -r bw bc <<< "$b"
    printf 'round %d: libCacheSim %.2f s wall %.2f s CPU, inferprof %.2f s wall %.2f s CPU: %.2fx wall, %.2fx CPU\n' \
      "$r" "$aw" "$ac" "$bw" "$bc" "$(echo "$aw / $bw" | bc -l)" "$(echo "$ac / $bc" | bc -l)"
  done
  stop_load
done
