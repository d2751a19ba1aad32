#!/usr/bin/env bash
# run --group across "hosts" on one machine: each replica in a network
# namespace of its own (its own address and hostname), Redis in another, one
# veth pair between each replica and Redis; the replicas are started one by
# one, each with its own K/N, as a scheduler would. Then merge, and checks:
# every trace line served once (or counted lost), the merged percentiles (by
# merge, and by the group's last replica with --merge-into) those
# of the union of the requests.csv files, the group's keys gone from Redis.
#
#   test/e2e/netns_group.sh build/inferprof          (ctest e2e-netns-group)
#   REQUESTS=100000 RATE=10000 KILL=1 test/e2e/netns_group.sh build/inferprof
#
# REQUESTS (4000), RATE (trace req/s, 2000), REPLICAS (4), CLOSED=1 (closed
# loop: each replica as fast as it can, instead of the trace's times), KILL=1 (SIGKILL
# replica 1 mid-run), RESTART_REDIS=1 (restart Redis mid-run), KEEP=DIR (keep
# the folders there). Exits 77 (a skip) without root or network namespaces.
set -euo pipefail
BIN=$(realpath "$1")
REQUESTS=${REQUESTS:-4000}
RATE=${RATE:-2000}
N=${REPLICAS:-4}
KILL=${KILL:-}
RESTART_REDIS=${RESTART_REDIS:-}
LOOP=(--open-loop)
if [[ -n ${CLOSED:-} ]]; then LOOP=(); fi
if [[ $(id -u) != 0 ]]; then echo "skip: network namespaces need root"; exit 77; fi
for tool in ip unshare redis-server redis-cli python3; do
  command -v "$tool" >/dev/null || { echo "skip: $tool is not installed"; exit 77; }
done
TAG=ipg$$
REDIS_NS=$TAG-redis
if ! ip netns add "$REDIS_NS" 2>/dev/null; then echo "skip: cannot create network namespaces here"; exit 77; fi
WORK=$(mktemp -d /tmp/inferprof-netns.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [[ -n ${REDIS_PID:-} ]]; then { kill -9 "$REDIS_PID"; wait "$REDIS_PID"; } 2>/dev/null || true; fi
  for k in $(seq 0 $((N - 1))); do ip netns del "$TAG-r$k" 2>/dev/null || true; done
  ip netns del "$REDIS_NS" 2>/dev/null || true
  if [[ -n ${KEEP:-} ]]; then rm -rf "$KEEP"; mv "$WORK" "$KEEP"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

ip -n "$REDIS_NS" link set lo up
for k in $(seq 0 $((N - 1))); do
  ip netns add "$TAG-r$k"
  ip link add "${TAG}v$k" type veth peer name "${TAG}p$k"
  ip link set "${TAG}v$k" netns "$TAG-r$k"
  ip link set "${TAG}p$k" netns "$REDIS_NS"
  ip -n "$TAG-r$k" addr add "10.213.$k.2/24" dev "${TAG}v$k"
  ip -n "$REDIS_NS" addr add "10.213.$k.1/24" dev "${TAG}p$k"
  ip -n "$TAG-r$k" link set "${TAG}v$k" up
  ip -n "$TAG-r$k" link set lo up
  ip -n "$REDIS_NS" link set "${TAG}p$k" up
done
start_redis() {
  ip netns exec "$REDIS_NS" redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save "" \
    --appendonly no >"$WORK/redis.log" 2>&1 &
  REDIS_PID=$!
  for _ in $(seq 100); do
    ip netns exec "$REDIS_NS" redis-cli -p 6379 ping >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "Redis did not start"; exit 1
}
rcli() { ip netns exec "$REDIS_NS" redis-cli -p 6379 "$@"; }
start_redis

"$BIN" gen-model --arch mlp -o "$WORK/m.pt" >/dev/null
"$BIN" gen-trace --requests "$REQUESTS" --keys 1000 --rate "$RATE" -o "$WORK/t.jsonl" >/dev/null
mkdir -p "$WORK/shared"
T0=$(date +%s.%N)
for k in $(seq 0 $((N - 1))); do
  ip netns exec "$TAG-r$k" unshare --uts sh -c "hostname host-$k; exec \"\$0\" \"\$@\"" "$BIN" run "$WORK/m.pt" \
    --trace "$WORK/t.jsonl" "${LOOP[@]}" --caches l1,l2 --group g --replica "$k/$N" --shard-by key \
    --redis "redis://10.213.$k.1:6379" --warmup 1 --no-progress --out "$WORK/shared/replica-$k" \
    --merge-into "$WORK/group-merged" \
    >"$WORK/replica-$k.log" 2>&1 &
  PIDS+=($!)
  sleep 0.2
done
if [[ -n $KILL || -n $RESTART_REDIS ]]; then
  for _ in $(seq 600); do [[ $(rcli EXISTS inferprof:group:g:go) == 1 ]] && break; sleep 0.05; done
  sleep 2
  if [[ -n $KILL ]]; then kill -9 "${PIDS[1]}"; echo "killed replica 1"; fi
  if [[ -n $RESTART_REDIS ]]; then
    kill -9 "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true
    sleep 1; start_redis; echo "restarted Redis"
  fi
fi
FAILED=0
for k in $(seq 0 $((N - 1))); do
  code=0; { wait "${PIDS[$k]}"; } 2>/dev/null || code=$?
  echo "replica $k: exit $code"
  if [[ $code != 0 && ! ( -n $KILL && $k == 1 ) ]]; then FAILED=1; tail -5 "$WORK/replica-$k.log"; fi
done
T1=$(date +%s.%N)
code=0; "$BIN" merge "$WORK"/shared/replica-* --replicas "$N" --out "$WORK/merged" >"$WORK/merge.log" 2>&1 || code=$?
echo "merge: exit $code (expected $([[ -n $KILL ]] && echo 3 || echo 0))"
[[ $code == $([[ -n $KILL ]] && echo 3 || echo 0) ]] || { FAILED=1; tail -5 "$WORK/merge.log"; }
keys=$(rcli DBSIZE)
echo "keys left in Redis: $keys"
[[ $keys == 0 ]] || { FAILED=1; rcli KEYS '*' | head; }
grep -h "warning\|group g" "$WORK"/replica-*.log || true

python3 - "$WORK" "$REQUESTS" "$N" "$T0" "$T1" "${KILL:+1}" <<'EOF' || FAILED=1
import csv, glob, json, math, sys
work, requests, n, t0, t1, killed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), sys.argv[6] == "1"
ok = True
def check(cond, what):
    global ok
    print(("ok    " if cond else "FAIL  ") + what)
    ok = ok and cond
lines, totals, walls, ends = {}, [], [], []
for folder in sorted(glob.glob(work + "/shared/replica-*")):
    try:
        s = json.load(open(folder + "/summary.json"))
    except FileNotFoundError:
        continue  # the killed replica
    walls.append(s["run"]["wall_s"])
    for row in csv.DictReader(open(folder + "/requests.csv")):
        lines[row["line"]] = lines.get(row["line"], 0) + 1
        totals.append(float(row["total_us"]))
m = json.load(open(work + "/merged/summary.json"))
by_group = json.load(open(work + "/group-merged/summary.json"))
check(by_group["total"] == m["total"] and by_group["requests"] == m["requests"],
      "the group's last replica merged (--merge-into) what merge of the folders gives")
reps = json.load(open(work + "/merged/replicas.json"))
check(all(v == 1 for v in lines.values()), f"{len(lines)} trace lines served, none twice (duplicated: {reps['duplicated']})")
check(reps["lost"] + len(lines) == requests, f"served {len(lines)} + lost {reps['lost']} = {requests} requests in the trace")
check((reps["lost"] > 0) == killed, "lost only when a replica was killed")
check(m["requests"] == len(totals), f"merged summary counts {m['requests']} requests")
totals.sort()
for name, q in (("p50_us", .5), ("p90_us", .9), ("p99_us", .99)):
    exact = totals[max(1, math.ceil(q * len(totals))) - 1]
    got = m["total"][name]
    check(abs(got - exact) <= 0.004 * exact + 0.001, f"merged {name} {got:.3f} vs {exact:.3f} from the union (histogram: within 0.4%)")
hosts = sorted(r["host"] for r in reps["replicas"] if r["host"])
check(len(set(hosts)) == len(hosts) and all(h.startswith("host-") for h in hosts), "hosts: " + ", ".join(hosts))
print(f"group wall (first start to last end) {m['run']['wall_s']:.3f} s; slowest replica's replay {max(walls):.3f} s: "
      f"{m['run']['wall_s'] / max(walls):.3f}x; whole script, start to merge {t1 - t0:.1f} s")
sys.exit(0 if ok else 1)
EOF
exit $FAILED
