#!/usr/bin/env bash
# gloo_perf, the coll_perf table for Gloo: every algorithm exact under collrun
# (2 and 3 ranks) and once under mpirun; unsupported ops refused by name.
# Exit 77 (skipped) when gloo_perf was not built.
set -euo pipefail
build=$1
with_gloo=$2
perf=$build/bench/gloo_perf
collrun=$build/tools/collrun
if [ "$with_gloo" != "ON" ]; then echo "SKIP: built without Gloo (COLL_WITH_GLOO=OFF; apt-get install libgloo-dev)"; exit 77; fi
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
sweep=(-b 8 -e 256K -f 32 -n 1 -w 0)

for n in 2 3; do
  for a in ring ring_chunked halving_doubling fn_ring bcube; do
    out=$(timeout 120 "$collrun" -n $n "$perf" "${sweep[@]}" -a $a 2>&1) || fail "n=$n -a $a exited non-zero: $out"
    check_ok "$out" "n=$n -a $a"
    grep -q "gloo_perf: allreduce, $n ranks, float32 sum, algorithm $a," <<<"$out" || fail "n=$n -a $a: header: $out"
  done
  out=$(timeout 120 "$collrun" -n $n "$perf" "${sweep[@]}" -C broadcast -r $((n - 1)) -d int8 2>&1) \
    || fail "n=$n broadcast exited non-zero: $out"
  check_ok "$out" "n=$n broadcast"
  echo "== $n ranks: every algorithm exact"
done

for d in int8 uint32 half double; do
  for o in prod min; do
    out=$(timeout 120 "$collrun" -n 3 "$perf" "${sweep[@]}" -d $d -o $o 2>&1) || fail "-d $d -o $o: $out"
    check_ok "$out" "-d $d -o $o"
  done
done
echo "== dtypes and ops exact"

set +e
err=$(timeout 60 "$collrun" -n 2 "$perf" -b 1K -e 1K -o avg 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] || fail "-o avg succeeded"
grep -q "Gloo has no 'avg' reduction" <<<"$err" || fail "-o avg should say why it cannot: $err"
set +e
err=$(timeout 60 "$collrun" -n 2 "$perf" -b 1K -e 1K -d bfloat16 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] || fail "-d bfloat16 succeeded"
grep -q "bfloat16 has no Gloo type" <<<"$err" || fail "-d bfloat16 should say why it cannot: $err"
echo "== avg and bfloat16 refused"

if command -v mpirun >/dev/null; then
  export OMPI_MCA_plm_rsh_agent=  # no ssh on a single host
  out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 "$perf" "${sweep[@]}" 2>&1) \
    || fail "mpirun -np 2 exited non-zero: $out"
  check_ok "$out" "mpirun -np 2"
  grep -q "allreduce, 2 ranks" <<<"$out" || fail "mpirun: not 2 ranks: $out"
  echo "== mpirun -np 2: OK"
else
  echo "== mpirun not found: not run under mpirun"
fi
echo "gloo_perf_test: all passed"
