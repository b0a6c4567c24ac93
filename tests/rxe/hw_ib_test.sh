#!/usr/bin/env bash
# ctest hw-ib: where this machine's own kernel has a verbs device (real
# InfiniBand or RoCE, or rxe loaded on the host), the ib transport's
# conformance suite (a two-process loopback) and an allreduce matrix slice
# over the first active port, without QEMU. Skipped (77), saying why, where
# there is none.
#
#   hw_ib_test.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
if ! why=$("$build/tools/colldiag" --ib); then
  echo "hw-ib: skipped: $why"
  exit 77
fi
echo "$why"
export COLLTEST_REQUIRE_TRANSPORTS=ib
"$build/tests/transport_test" --gtest_brief=1 --gtest_filter='Transports/Conformance.*/ib' &&
  "$build/tests/allreduce_test" --gtest_brief=1 --gtest_filter='Ib/AllreduceMatrix.*'
