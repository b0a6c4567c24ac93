#!/usr/bin/env bash
# Inside one Soft-RoCE guest (tests/rxe/one_node_test.sh boots it): the ib
# transport against the kernel's rxe and rdma-core, with every rank in this
# guest (RoCE v2 through rxe's own loopback).
#
#   in_guest_one_node.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
# A dead peer is found in about 2 s (7 x 268 ms), not 34 s; ib must run.
# (14, 67 ms a try, is too short for emulated guests on a busy host.)
export COLLTEST_REQUIRE_TRANSPORTS=ib COLL_IB_TIMEOUT=16 COLLTEST_KILL_TRIALS=${COLLTEST_KILL_TRIALS:-6}
failed=()
step() {
  local name=$1
  shift
  local t0=$SECONDS
  echo "=== $name"
  if "$@"; then echo "=== $name: passed in $((SECONDS - t0)) s"; else failed+=("$name"); echo "=== $name: FAILED"; fi
}
gtest() { "$build/tests/$1" --gtest_brief=1 --gtest_filter="$2"; }

step "the verbs device as coll sees it" "$build/tools/colldiag" --ib
step "conformance suite over ib" gtest transport_test 'Transports/Conformance.*/ib'
step "allreduce matrix over ib" gtest allreduce_test 'Ib/AllreduceMatrix.*'
step "kill -9 trials over ib" gtest fault_test 'Transports/KillNine.*/ib'
step "a killed rank's forked child over ib" gtest failure_test 'Transports/ForkedChild.*/ib'
step "GID choice on real tables" bash "$src/tests/rxe/gid_cases.sh" "$build"
# Last: these take the link down and change addresses.
step "provoked failures" env COLLTEST_LINK_CONTROL=1 "$build/tests/ib_test" --gtest_brief=1
if [ ${#failed[@]} -gt 0 ]; then
  echo "in_guest_one_node: FAILED: ${failed[*]}"
  exit 1
fi
echo "in_guest_one_node: all passed"
