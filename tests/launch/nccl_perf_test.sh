#!/usr/bin/env bash
# nccl_perf, the coll_perf table for NCCL on every GPU of this machine. Where
# there is no GPU it must say so and exit 77; then this test is skipped.
# Exit 77 (skipped) also when nccl_perf was not built.
set -euo pipefail
build=$1
with_nccl=$2
perf=$build/bench/nccl_perf
if [ "$with_nccl" != "ON" ]; then echo "SKIP: built without NCCL (COLL_WITH_NCCL=OFF or no CUDA)"; exit 77; fi
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

set +e
out=$(timeout 300 "$perf" -b 8 -e 1M -f 32 -n 1 -w 0 2>&1); rc=$?
set -e
if [ "$rc" -eq 77 ]; then
  grep -q "^nccl_perf: no CUDA device: " <<<"$out" || fail "exit 77 without saying why: $out"
  echo "SKIP: $out"
  exit 77
fi
[ "$rc" -eq 0 ] || fail "exited $rc: $out"
grep -q "^# Out of bounds values : 0 OK$" <<<"$out" || fail "allreduce: $out"
for C in broadcast reduce allgather reduce_scatter alltoall; do
  out=$(timeout 300 "$perf" -C $C -b 8 -e 1M -f 32 -n 1 -w 0 -d bfloat16 -o max 2>&1) || fail "-C $C: $out"
  grep -q "^# Out of bounds values : 0 OK$" <<<"$out" || fail "-C $C: $out"
done
echo "nccl_perf_test: all passed"
