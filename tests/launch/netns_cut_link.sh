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
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
switch=$(node1_switch)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
env COLL_TIMEOUT_MS=$timeout_ms ${silence_ms:+COLL_TCP_SILENCE_MS=$silence_ms} "$collrun" --nodes 2 --placement cyclic --grace 60 --tag-output -n 4 \
  "$perf" -b 256K -e 256K -n 1000000 -w 0 -c 0 >"$out" 2>&1 &
job=$!
await_loop "$out" "$job" cut
ip netns exec "$switch" ip link set port1 down
cut=$(date +%s%N)
status=0
wait "$job" || status=$?
echo "cut: $(( ($(date +%s%N) - cut) / 1000000 )) ms, collrun exit $status"
grep "failed:" "$out" || true
