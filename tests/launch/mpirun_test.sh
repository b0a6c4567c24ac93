#!/usr/bin/env bash
# coll_perf under Open MPI's mpirun: the unique id travels by MPI_Bcast.
# Exit 77 (skipped) when mpirun or the MPI build is missing.
set -euo pipefail
build=$1
with_mpi=$2
if [ "$with_mpi" != "ON" ]; then echo "SKIP: coll was built without MPI (COLL_WITH_MPI=OFF)"; exit 77; fi
if ! command -v mpirun >/dev/null; then echo "SKIP: mpirun not found (apt-get install openmpi-bin)"; exit 77; fi
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
export OMPI_MCA_plm_rsh_agent=   # no ssh on a single host
for np in 2 4; do
  out=$(timeout 300 mpirun --allow-run-as-root --oversubscribe -np $np "$build/bench/coll_perf" -b 8 -e 1M -f 16 -n 2 -w 1 2>&1) \
    || fail "mpirun -np $np exited non-zero: $out"
  grep -q "^# Out of bounds values : 0 OK$" <<<"$out" || fail "np=$np: $out"
  grep -q "allreduce, $np ranks" <<<"$out" || fail "np=$np: not $np ranks: $out"
  echo "== mpirun -np $np: OK"
done
# The peer benchmark: Open MPI's own collectives, the same table and exact check.
for C in allreduce broadcast reduce allgather reduce_scatter alltoall; do
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 3 "$build/bench/mpi_perf" -C $C -b 8 -e 256K -f 32 -n 1 -w 0 -r 2 2>&1) \
    || fail "mpi_perf -C $C exited non-zero: $out"
  grep -q "^# Out of bounds values : 0 OK$" <<<"$out" || fail "mpi_perf -C $C: $out"
done
echo "== mpi_perf: every collective exact"
set +e
err=$(timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$build/bench/mpi_perf" -d bfloat16 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "mpi_perf -d bfloat16 succeeded: $err"
grep -q "bfloat16 has no MPI datatype" <<<"$err" || fail "mpi_perf -d bfloat16 should say why it cannot: $err"
echo "mpirun_test: all passed"
