#!/usr/bin/env bash
# Run under scripts/emulate-cluster.sh -k 2 (called by netns_test.sh): 2
# ranks, one per node, run 64 MiB allreduces. Rank 1 stops reading (SIGSTOP),
# so that rank 0's data to it waits behind a closed receive window, which
# rank 1's kernel keeps answering; then node 1's cable is pulled. Nothing is
# in flight then, so no acknowledgement is missing and no keep-alive is
# sent: only the kernel's unanswered window probes tell, which
# TCP_USER_TIMEOUT (COLL_TCP_SILENCE_MS) turns into an error. Rank 0 must
# fail long before COLL_TIMEOUT_MS: within two of the kernel's probe
# intervals, which grow while the window stays closed (seconds here).
# With a 5th argument "nocut" the cable stays in: rank 1 lives, its kernel
# answers, and rank 0 must wait for COLL_TIMEOUT_MS, not call it dead.
# Prints "stall: <ms from the cut to rank 0's error>" and rank 0's error.
set -euo pipefail
collrun=$1 perf=$2 timeout_ms=$3 silence_ms=$4 cut=${5:-cut}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
switch=$(node1_switch)
out=$(mktemp)
stopped=""
trap 'rm -f "$out"; [ -n "$stopped" ] && kill -KILL "$stopped" 2> /dev/null || true' EXIT
env COLL_TIMEOUT_MS="$timeout_ms" COLL_TCP_SILENCE_MS="$silence_ms" COLL_TRANSPORTS=tcp \
  "$collrun" --nodes 2 -n 2 --grace 1 --tag-output "$perf" -b 64M -e 64M -n 1000000 -w 0 -c 0 > "$out" 2>&1 &
job=$!
await_loop "$out" "$job" stall
for pid in $(pgrep -f -- "$perf -b 64M"); do
  if tr '\0' '\n' < "/proc/$pid/environ" | grep -qx "COLL_RANK=1"; then stopped=$pid; fi
done
[ -n "$stopped" ] || { echo "stall: rank 1's process not found"; cat "$out"; exit 1; }
kill -STOP "$stopped"
sleep 2  # rank 0 fills rank 1's buffers; the window closes
[ "$cut" = nocut ] || ip netns exec "$switch" ip link set port1 down
cut=$(date +%s%N)
ms=""
for _ in $(seq $(( (timeout_ms + 10000) / 100 ))); do
  if grep -q "^\[0\] coll_perf: allreduce failed" "$out"; then
    ms=$(( ($(date +%s%N) - cut) / 1000000 ))
    break
  fi
  sleep 0.1
done
kill -KILL "$stopped" 2> /dev/null || true
wait "$job" || true
echo "stall: ${ms:-never} ms"
grep "^\[0\] coll_perf: allreduce failed" "$out" || true
