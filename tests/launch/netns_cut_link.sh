#!/usr/bin/env bash
# Run under scripts/emulate-cluster.sh -k 2 (called by netns_test.sh): 4
# ranks interleaved over the 2 nodes run allreduces in a loop; once they
# do, node 1's cable is pulled at the switch (its port goes down, so node
# 1 sees nothing: no reset, no unreachable). Every rank, on both sides of the
# cut, must fail with an error within COLL_TIMEOUT_MS + 2 s of the cut.
# Optional 4th argument: COLL_TCP_SILENCE_MS (default: the library's).
# Prints "cut: <ms from cut to the last rank's exit>" and the ranks' errors.
set -euo pipefail
collrun=$1 perf=$2 timeout_ms=$3 silence_ms=${4:-}
node1=${COLL_NETNS_NODES#* }
node1=${node1%%:*}                          # cen<id>n1
switch=cesw${node1#cen}; switch=${switch%n1}  # cesw<id>
out=$(mktemp)
trap 'rm -f "$out"' EXIT
env COLL_TIMEOUT_MS=$timeout_ms ${silence_ms:+COLL_TCP_SILENCE_MS=$silence_ms} "$collrun" --nodes 2 --placement cyclic --grace 60 --tag-output -n 4 \
  "$perf" -b 256K -e 256K -n 1000000 -w 0 -c 0 >"$out" 2>&1 &
job=$!
# Cut once the ranks are in the loop (rank 0 has printed the table's
# header), not while they are still connecting.
for _ in $(seq 300); do grep -q "# coll_perf:" "$out" && break; sleep 0.1; done
sleep 0.5
# A job that never started its loop, or failed before the cut, would pass for one that found it.
grep -q "# coll_perf:" "$out" && kill -0 "$job" 2>/dev/null && ! grep -q "failed" "$out" ||
  { echo "cut: the job was not running at the cut"; cat "$out"; exit 1; }
ip netns exec "$switch" ip link set port1 down
cut=$(date +%s%N)
status=0
wait "$job" || status=$?
echo "cut: $(( ($(date +%s%N) - cut) / 1000000 )) ms, collrun exit $status"
grep "failed:" "$out" || true
