#!/usr/bin/env bash
# coll_perf through collrun and alone: every datatype and op, exact results.
set -euo pipefail
build=$1
collrun=$build/tools/collrun
perf=$build/bench/coll_perf
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

echo "== one rank, no launcher"
out=$(env -u COLL_RANK "$perf" -b 8 -e 1K -f 4 -n 2 -w 1)
check_ok "$out" "single rank"

for n in 2 4; do
  for d in int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double; do
    for o in sum prod min max avg; do
      out=$("$collrun" -n $n "$perf" -b 4 -e 64K -f 32 -n 1 -w 0 -d $d -o $o)
      check_ok "$out" "n=$n $d $o"
    done
  done
  echo "== $n ranks: every dtype and op exact"
done

for C in broadcast reduce allgather reduce_scatter alltoall; do
  for d in int8 bfloat16 double; do
    out=$("$collrun" -n 3 "$perf" -C $C -b 4 -e 256K -f 16 -n 1 -w 0 -d $d -o max -r 2)
    check_ok "$out" "-C $C $d"
    grep -q "coll_perf: $C, 3 ranks" <<<"$out" || fail "-C $C: header names the collective: $out"
  done
done
echo "== -C: every collective exact"
out=$("$collrun" -n 4 "$perf" -C broadcast -b 1M -e 1M -n 1 -w 0 -r 3)
grep -Eq "^ +1048576 +262144 +float32 +sum +3 " <<<"$out" || fail "broadcast row shows root 3: $out"

echo "== the table has the nccl-tests columns"
out=$("$collrun" -n 3 "$perf" -b 1M -e 1M -n 2 -w 1)
check_ok "$out" "3 ranks 1M"
grep -q "size *count *type *redop *root *time *algbw *busbw *#wrong" <<<"$out" || fail "header: $out"
grep -Eq "^ +1048576 +262144 +float32 +sum +-1 " <<<"$out" || fail "row: $out"

echo "== -R 1: buffers from coll_mem_alloc, through the slots and read in place"
for mapped in 0 1; do
  out=$(COLL_SHM_MAPPED=$mapped "$collrun" -n 3 "$perf" -b 4 -e 4M -f 16 -n 1 -w 0 -R 1 -d bfloat16 -o avg)
  check_ok "$out" "-R 1, COLL_SHM_MAPPED=$mapped"
  grep -q "buffers from coll_mem_alloc" <<<"$out" || fail "-R 1: the header does not say so: $out"
done

echo "== -a names an algorithm; an unknown one is an error"
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
out=$(COLL_DEBUG=TRACE COLL_DEBUG_SUBSYS=COLL "$collrun" -n 2 "$perf" -b 1K -e 1K -n 1 -w 0 -a ring 2>"$trace") ||
  fail "-a ring: $out $(not_traced "$trace")"
grep -q "^# coll_perf: allreduce, 2 ranks, float32 sum, algorithm ring," <<<"$out" || fail "-a ring: $out"
# What ran, not only what the header echoes (without -a, 1 KiB on 2 ranks runs another).
ran=$(algorithms_run "$trace" allreduce)
[ "$ran" = ring ] || fail "-a ring: the allreduces ran with '${ran:-nothing}': $(not_traced "$trace")"
set +e
err=$("$collrun" -n 2 --grace 1 "$perf" -b 1K -e 1K -a nosuch 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] || fail "-a nosuch succeeded"
grep -q "nosuch" <<<"$err" || fail "the error does not name the algorithm: $err"

echo "== shm waits by the CPUs its ranks may run on, not by those online"
# waiting RANKS CPUS [collrun options]: the wait shm's log line says it chose, under taskset -c CPUS.
waiting() {
  local n=$1 cpus=$2
  shift 2
  COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=NET taskset -c "$cpus" "$collrun" -n "$n" "$@" "$perf" -b 8 -e 8 -n 1 -w 0 2>&1 |
    sed -n 's/.* unlinked; \(.*\)$/\1/p' | sort -u
}
read -ra allowed <<<"$(/usr/bin/python3 -c "$cpus_of")"
first=${allowed[0]} last=${allowed[${#allowed[@]} - 1]}
got=$(waiting 2 "$first") || fail "2 ranks under taskset -c $first did not run"
[ "$got" = "2 rank(s) on 1 CPU(s): more ranks than cores, yielding before sleeping" ] ||
  fail "2 ranks under taskset -c $first: '$got'"
if [ "${#allowed[@]}" -ge 2 ]; then
  got=$(waiting 2 "$first,$last" --bind-to core) || fail "2 ranks bound to 2 CPUs did not run"
  [ "$got" = "2 rank(s) on 2 CPU(s): spinning before sleeping" ] || fail "2 ranks bound to 2 CPUs: '$got'"
  got=$(waiting 3 "$first,$last" --bind-to core) || fail "3 ranks bound to 2 CPUs did not run"
  [ "$got" = "3 rank(s) on 2 CPU(s): more ranks than cores, yielding before sleeping" ] ||
    fail "3 ranks bound to 2 CPUs: '$got'"
fi

echo "perf_test: all passed"
