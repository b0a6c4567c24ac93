#!/usr/bin/env bash
# The benchmarks beside coll_perf run and say what they should: the
# microbenchmarks list every kernel this CPU supports, both transports and
# what one core can move, and scripts/compare.sh produces its CSV, ratio
# table and plots on a short sweep (no install or build: COMPARE_NO_BUILD=1,
# the build is this one).
# Exit 77 (skipped) when Google Benchmark was not found.
set -euo pipefail
build=$1
source_dir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
if [ ! -x "$build/bench/micro/reduce_bench" ]; then echo "SKIP: bench/micro not built (libbenchmark-dev)"; exit 77; fi

out=$(timeout 300 "$build/bench/micro/reduce_bench" --benchmark_filter='/32K/' --benchmark_min_time=0.001 2>&1) ||
  fail "reduce_bench exited non-zero: $out"
for want in memcpy/32K a+=b/float32/32K reduce/portable/float32/32K reduce/portable/bfloat16/32K; do
  grep -q "^$want/" <<<"$out" || fail "reduce_bench has no $want: $out"
done
if grep -q avx2 /proc/cpuinfo; then grep -q "^reduce/avx2/float16/32K/" <<<"$out" || fail "no avx2 kernel on an AVX2 CPU"; fi
if grep -q avx512bw /proc/cpuinfo; then grep -q "^reduce/avx512/bfloat16/32K/" <<<"$out" || fail "no avx512 kernel"; fi
echo "== reduce_bench: OK"

out=$(timeout 300 "$build/bench/micro/transport_bench" --benchmark_filter='pingpong/cache_line|pingpong/[a-z]+/8/|stream/[a-z]+/65536/' \
  --benchmark_min_time=0.001 2>&1) || fail "transport_bench exited non-zero: $out"
for want in pingpong/cache_line pingpong/shm/8 pingpong/tcp/8 stream/shm/65536 stream/tcp/65536; do
  grep -q "^$want/" <<<"$out" || fail "transport_bench has no $want: $out"
done
grep -qi "error" <<<"$out" && fail "transport_bench reported an error: $out"
echo "== transport_bench: OK"

out=$(timeout 300 "$build/bench/micro/core_bench" --benchmark_min_time=0.001 2>&1) || fail "core_bench exited non-zero: $out"
for want in core/read/64M core/stream_write/64M core/copy/64M; do
  grep -q "^$want/" <<<"$out" || fail "core_bench has no $want: $out"
done
if [ "$(nproc)" -ge 2 ]; then
  grep -q "^core/cross_read/1M/" <<<"$out" || fail "core_bench has no core/cross_read/1M: $out"
  grep -qi "error" <<<"$out" && fail "core_bench reported an error: $out"
fi
echo "== core_bench: OK"

if [ ! -x "$build/bench/mpi_perf" ]; then echo "bench_test: compare.sh skipped (no mpi_perf)"; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
peers=mpi
[ -x "$build/bench/gloo_perf" ] && peers="mpi gloo"
out=$(cd "$source_dir" && COMPARE_NO_BUILD=1 COMPARE_BUILD_DIR="$build" timeout 600 scripts/compare.sh \
  -b 8 -e 8M -f 16 -r 2 -i 3 -w 1 -p "$peers" -o "$tmp" 2>&1) || fail "compare.sh exited non-zero: $out"
grep -q "^| size | coll us | coll busbw | mpi us" <<<"$out" || fail "no ratio table: $out"
grep -q "^| 8M |" <<<"$out" || fail "the sweep did not reach 8M: $out"
rows=$(grep -c "^coll," "$tmp/compare.csv")
[ "$rows" -eq 12 ] || fail "compare.csv has $rows coll rows, want 6 sizes x 2 rounds"
for f in compare.png compare.svg medians.csv ratios.md; do [ -s "$tmp/$f" ] || fail "no $f"; done
grep -q "<svg" "$tmp/compare.svg" || fail "compare.svg is not SVG"
echo "== compare.sh: OK"
echo "bench_test: all passed"
