#!/usr/bin/env bash
# The emulated cluster (scripts/emulate-cluster.sh): 2 network namespaces as
# nodes, ranks placed on them interleaved (rank r on node r mod 2), shared
# memory inside a node and TCP between nodes. coll_perf checks every
# collective exactly through collrun --nodes; then allreduce matrices run
# with their ranks spread over the nodes (the hierarchical one included),
# and a cable pulled mid-run must become an error on every rank.
# Skips (77) without root or ip.
set -euo pipefail
build=$1 source=$2
emulate=$source/scripts/emulate-cluster.sh
collrun=$build/tools/collrun
perf=$build/bench/coll_perf
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

probe=0
"$emulate" -k 1 -r none -- true 2> /dev/null || probe=$?
if [ "$probe" -eq 77 ]; then
  echo "netns_test: skipped: network namespaces cannot be created here (needs root and iproute2)"
  exit 77
fi
[ "$probe" -eq 0 ] || fail "emulate-cluster.sh -k 1 -- true exited $probe"

echo "== a node's link holds its rate at every moment: a peak rate 5% above it"
qdisc=$("$emulate" -k 1 -r 1gbit -- sh -c 'n=${COLL_NETNS_NODES%%:*}; ip netns exec $n tc qdisc show dev eth0' 2>&1) ||
  fail "tc qdisc show: $qdisc"
grep -q "tbf .* rate 1Gbit .* peakrate 1050Mbit" <<<"$qdisc" || fail "no peak rate on the link: $qdisc"
# A rate tc takes without a peak rate (a share of the interface's speed) still limits, and says so.
qdisc=$("$emulate" -k 1 -r 10% -- sh -c 'n=${COLL_NETNS_NODES%%:*}; ip netns exec $n tc qdisc show dev eth0' 2>&1) ||
  fail "-r 10%: $qdisc"
grep -q "no peak rate that tc takes" <<<"$qdisc" && grep -q "^qdisc tbf .* rate " <<<"$qdisc" || fail "-r 10%: $qdisc"

echo "== collrun --nodes 2, interleaved, 1 Gbit/s links: every collective exact"
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
for setting in "" "COLL_TOPO_AWARE=0 COLL_ALGO=ring" "COLL_ALGO=ring" "COLL_ALGO=tree" "COLL_ALGO=hierarchical"; do
  out=$(env $setting COLL_DEBUG=TRACE COLL_DEBUG_SUBSYS=COLL "$emulate" -k 2 -r 1gbit -- \
          "$collrun" --nodes 2 --placement cyclic -n 4 "$perf" -b 4 -e 1M -f 32 -n 2 -w 1 2>"$trace") ||
    fail "allreduce ($setting): $out $(not_traced "$trace")"
  check_ok "$out" "allreduce ($setting)"
  # The setting took effect: every allreduce ran with the algorithm it names.
  want=${setting##*COLL_ALGO=}
  ran=$(algorithms_run "$trace" allreduce)
  [ -z "$setting" ] || [ "$ran" = "$want" ] || fail "allreduce ($setting): ran with '${ran//$'\n'/, }'"
done
for C in broadcast reduce allgather reduce_scatter alltoall; do
  out=$("$emulate" -k 2 -r none -- "$collrun" --nodes 2 --placement cyclic -n 4 \
          "$perf" -C $C -b 4 -e 256K -f 16 -n 1 -w 0 -d int32 -o sum -r 1 2>&1) || fail "$C: $out"
  check_ok "$out" "$C"
done
out=$("$emulate" -k 3 -r none -- "$collrun" --nodes 3 -n 5 "$perf" -b 4 -e 64K -f 16 -n 1 -w 0 2>&1) ||
  fail "3 nodes, 5 ranks in blocks: $out"
check_ok "$out" "3 nodes, 5 ranks in blocks"

trials=${COLL_NETNS_CUT_TRIALS:-20}
echo "== a node's cable pulled at the switch: every rank fails within COLL_TIMEOUT_MS + 2 s ($trials trials)"
slowest=0 fastest=999999
for trial in $(seq "$trials"); do
  out=$("$emulate" -k 2 -r 1gbit -- "$source/tests/launch/netns_cut_link.sh" "$collrun" "$perf" 3000 2>&1) ||
    fail "cut link, trial $trial: $out"
  ms=$(sed -n 's/^cut: \([0-9]*\) ms, collrun exit \([0-9]*\)$/\1/p' <<<"$out")
  status=$(sed -n 's/^cut: \([0-9]*\) ms, collrun exit \([0-9]*\)$/\2/p' <<<"$out")
  [ -n "$ms" ] && [ "$status" != 0 ] || fail "cut link, trial $trial: the job did not fail: $out"
  [ "$ms" -le 5000 ] || fail "cut link, trial $trial: the last rank ended $ms ms after the cut (limit 5000): $out"
  for r in 0 1 2 3; do
    grep -Eq "^\[$r\] coll_perf: allreduce failed: COLL_(TIMEOUT|REMOTE_ERROR)" <<<"$out" ||
      fail "cut link, trial $trial: rank $r did not report an error: $out"
  done
  echo "trial $trial: every rank failed; the last $ms ms after the cut"
  [ "$ms" -gt "$slowest" ] && slowest=$ms
  [ "$ms" -lt "$fastest" ] && fastest=$ms
done
echo "cut link: $trials trials, every rank of every trial failed, the last $fastest-$slowest ms after the cut"

echo "== the same with a 60 s timeout: the silence is found (COLL_TCP_SILENCE_MS=2000), a remote error on every rank"
out=$("$emulate" -k 2 -r 1gbit -- "$source/tests/launch/netns_cut_link.sh" "$collrun" "$perf" 60000 2000 2>&1) ||
  fail "cut link, silence: $out"
ms=$(sed -n 's/^cut: \([0-9]*\) ms, collrun exit \([0-9]*\)$/\1/p' <<<"$out")
[ -n "$ms" ] && [ "$ms" -le 7000 ] || fail "cut link, silence: the last rank ended $ms ms after the cut (limit 7000): $out"
for r in 0 1 2 3; do
  grep -Eq "^\[$r\] coll_perf: allreduce failed: COLL_REMOTE_ERROR" <<<"$out" ||
    fail "cut link, silence: rank $r did not report a remote error: $out"
done
echo "$out" | grep "failed:"
echo "cut link, silence: every rank failed with COLL_REMOTE_ERROR, the last $ms ms after the cut"

echo "== a peer that stopped reading, then lost its node: found by its window probes, not COLL_TIMEOUT_MS"
out=$("$emulate" -k 2 -r none -- "$source/tests/launch/netns_stall_then_cut.sh" "$collrun" "$perf" 60000 2000 2>&1) ||
  fail "stall then cut: $out"
ms=$(sed -n 's/^stall: \([0-9]*\) ms$/\1/p' <<<"$out")
[ -n "$ms" ] && [ "$ms" -le 20000 ] || fail "stall then cut: rank 0 ended ${ms:-never} ms after the cut (limit 20000): $out"
grep -Eq "^\[0\] coll_perf: allreduce failed: COLL_REMOTE_ERROR.*probes of its closed receive window" <<<"$out" ||
  fail "stall then cut: rank 0 did not name the unanswered probes: $out"
echo "stall then cut: rank 0 failed $ms ms after the cut"
out=$("$emulate" -k 2 -r none -- "$source/tests/launch/netns_stall_then_cut.sh" "$collrun" "$perf" 8000 2000 nocut 2>&1) ||
  fail "stall, no cut: $out"
grep -Eq "^\[0\] coll_perf: allreduce failed: COLL_TIMEOUT" <<<"$out" ||
  fail "stall, no cut: a live peer that reads nothing was taken for dead, or never timed out: $out"
echo "stall, no cut: rank 0 waited for its timeout (its peer's kernel answered)"

echo "== collrun --nodes without the emulated cluster is a clear error"
if out=$(env -u COLL_NETNS_NODES "$collrun" --nodes 2 -n 2 "$perf" 2>&1); then fail "ran without nodes"; fi
grep -q "emulate-cluster.sh" <<<"$out" || fail "no hint at emulate-cluster.sh: $out"

echo "== the allreduce matrix, ranks spread over 2 nodes"
"$emulate" -k 2 -r none -- "$build/tests/allreduce_test" \
  --gtest_filter='Shm/AllreduceMatrix.*/ring_4ranks_shm:Shm/AllreduceMatrix.*/auto_3ranks_shm:Shm/AllreduceMatrix.*/halving_doubling_5ranks_shm:Nodes/AllreduceOnNodes.*/hierarchical_4ranks_2nodes' \
  || fail "allreduce matrix on the emulated cluster"
echo "netns_test: OK"
