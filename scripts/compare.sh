#!/usr/bin/env bash
# coll beside its peers (Open MPI, Gloo) on one sweep, in one run: the
# libraries take turns (coll, mpi, gloo, coll, mpi, gloo, ...) for R rounds,
# so that a noisy neighbour hurts all of them alike, and each size's median
# over the rounds is compared. Writes OUT/compare.csv (every measurement),
# OUT/medians.csv, OUT/compare.png and OUT/compare.svg (busbw against size),
# and prints the ratio table (coll's speed over each peer's: > 1 means coll
# is faster) and, for 2 ranks over shared memory, how close the largest size
# comes to the memory bound measured in the same rounds (OUT/bound.md).
# Every run checks every result exactly; a wrong one fails.
#
#   scripts/compare.sh                         # np=2, 8 B .. 64 MiB, shared memory
#   scripts/compare.sh -n 4 -r 5 -e 16M
#   scripts/compare.sh -t tcp -b 1M -e 64M     # coll and Open MPI over TCP only
#
# Installs what it needs (Open MPI, Gloo, gnuplot) and builds build/ first.
set -euo pipefail
cd "$(dirname "$0")/.."

np=2 min=8 max=64M factor=2 rounds=3 transport=shm out=compare iters="" warmup="" dtype=float32 collective=allreduce
peers="mpi gloo"
usage() {
  cat <<USAGE
usage: scripts/compare.sh [-C collective] [-n ranks] [-b min] [-e max] [-f factor] [-r rounds] [-i iters]
                          [-w warmup] [-d dtype] [-t shm|tcp] [-p "mpi gloo gloo:ALGO"] [-o outdir]
  defaults: -C $collective -n $np -b $min -e $max -f $factor -r $rounds -d $dtype -t $transport -p "$peers" -o $out
  -C        what coll_perf -C measures (allreduce, sendrecv, ...); Gloo measures allreduce and broadcast only,
            and the memory bound is an allreduce's
  -i, -w    timed and warm-up iterations; by default 200 and 20 below 4 MiB, 10 and 3 from 4 MiB
            (a small size's time is a few microseconds: few iterations would measure one hiccup)
  -t tcp    coll with COLL_TRANSPORTS=tcp and Open MPI with --mca btl tcp,self (Gloo is always TCP)
  -p        peers: mpi, gloo (its default algorithm) or gloo:ring|ring_chunked|halving_doubling, and
            coll-shared: coll with buffers from coll_mem_alloc (coll_perf -R 1) and COLL_SHM_MAPPED=1,
            so that ranks on the node read them in place, beside coll with private buffers
USAGE
}
while getopts "C:n:b:e:f:r:i:w:d:t:p:o:h" opt; do
  case $opt in
    C) collective=$OPTARG ;; n) np=$OPTARG ;; b) min=$OPTARG ;; e) max=$OPTARG ;; f) factor=$OPTARG ;; r) rounds=$OPTARG ;;
    i) iters=$OPTARG ;; w) warmup=$OPTARG ;; d) dtype=$OPTARG ;; t) transport=$OPTARG ;;
    p) peers=$OPTARG ;; o) out=$OPTARG ;; h) usage; exit 0 ;; *) usage >&2; exit 2 ;;
  esac
done
case $transport in shm | tcp) ;; *) echo "compare: -t must be shm or tcp" >&2; exit 2 ;; esac

# COMPARE_NO_BUILD=1 (the test suite) uses COMPARE_BUILD_DIR as it is.
build=${COMPARE_BUILD_DIR:-build}
if [ "${COMPARE_NO_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh >&2
  cmake --preset release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target collrun coll_perf mpi_perf gloo_perf >/dev/null
  # The bound's benchmark exists where Google Benchmark was found.
  cmake --build "$build" -j "$(nproc)" --target reduce_bench >/dev/null 2>&1 || true
fi
mkdir -p "$out"

bytes_of() { numfmt --from=iec "$1"; }
# The sweep in up to two parts: below 4 MiB with many iterations, from 4 MiB
# with few. Each part is "min max iters warmup".
parts=()
split=4194304
lo=$(bytes_of "$min") hi=$(bytes_of "$max")
if [ -n "$iters" ] || [ "$hi" -lt "$split" ] || [ "$lo" -ge "$split" ]; then
  small=$([ "$lo" -lt "$split" ] && echo 1 || echo 0)
  parts=("$lo $hi ${iters:-$([ $small = 1 ] && echo 200 || echo 10)} ${warmup:-$([ $small = 1 ] && echo 20 || echo 3)}")
else
  # The first size at or above 4 MiB on the -b * -f^k ladder starts the second part.
  next=$lo
  while [ "$next" -lt "$split" ]; do next=$(awk -v b="$next" -v f="$factor" 'BEGIN { n = int(b * f); print (n <= b ? b + 1 : n) }'); done
  parts=("$lo $((next - 1)) 200 ${warmup:-20}")
  [ "$next" -le "$hi" ] && parts+=("$next $hi 10 ${warmup:-3}")
fi

# One command line per library label and part.
command_for() {
  local part=($2)
  local sweep=(-C "$collective" -b "${part[0]}" -e "${part[1]}" -f "$factor" -n "${part[2]}" -w "${part[3]}" -d "$dtype")
  case $1 in
    coll | coll-shared)
      local env=() shared=""
      [ "$transport" = tcp ] && env=(env COLL_TRANSPORTS=tcp)
      [ "$1" = coll-shared ] && shared="-R 1" && env=(env COLL_SHM_MAPPED=1 "${env[@]:1}")
      echo "${env[*]} $build/tools/collrun -n $np $build/bench/coll_perf ${sweep[*]} $shared" ;;
    mpi)
      local btl=""
      [ "$transport" = tcp ] && btl="--mca btl tcp,self"
      echo "mpirun --allow-run-as-root --oversubscribe $btl -np $np $build/bench/mpi_perf ${sweep[*]}" ;;
    gloo) echo "$build/tools/collrun -n $np $build/bench/gloo_perf ${sweep[*]}" ;;
    gloo:*) echo "$build/tools/collrun -n $np $build/bench/gloo_perf ${sweep[*]} -a ${1#gloo:}" ;;
    *) echo "compare: unknown peer '$1'" >&2; exit 2 ;;
  esac
}
libs=(coll $peers)
for lib in "${libs[@]}"; do command_for "$lib" "${parts[0]}" >/dev/null; done

csv=$out/compare.csv
: >"$out/bound.csv"
echo "library,ranks,transport,dtype,bytes,round,time_us,busbw_gbps,inplace_time_us,inplace_busbw_gbps" >"$csv"
start=$(date +%s)
total=$((rounds * ${#libs[@]}))
done_runs=0
for ((round = 1; round <= rounds; round++)); do
  for lib in "${libs[@]}"; do
    printf '\rcompare: round %d/%d, %-24s (%d/%d runs, %ds)  ' "$round" "$rounds" "$lib" "$done_runs" "$total" \
      $(($(date +%s) - start)) >&2
    table=""
    for part in "${parts[@]}"; do
      cmd=$(command_for "$lib" "$part")
      if ! t=$(eval "timeout 1800 $cmd" 2>&1); then
        echo >&2
        echo "compare: $lib failed: $cmd" >&2
        echo "$t" >&2
        exit 1
      fi
      if ! grep -q "^# Out of bounds values : 0 OK" <<<"$t"; then
        echo >&2
        echo "compare: $lib gave wrong results: $cmd" >&2
        echo "$t" >&2
        exit 1
      fi
      table+=$t$'\n'
    done
    # Rows: size count type redop root | time algbw busbw #wrong | the same in place.
    awk -v lib="$lib" -v np="$np" -v tr="$transport" -v dt="$dtype" -v round="$round" \
      '/^ +[0-9]/ { print lib "," np "," tr "," dt "," $1 "," round "," $6 "," $8 "," $10 "," $12 }' \
      <<<"$table" >>"$csv"
    done_runs=$((done_runs + 1))
  done
  # The memory bound of this round (docs/PERFORMANCE.md, "The bound"): a += b
  # on as many threads as ranks, bytes read plus written per second.
  if [ "$collective" = allreduce ] && [ "$transport" = shm ] && [ "$np" = 2 ] && [ -x "$build/bench/micro/reduce_bench" ]; then
    "$build/bench/micro/reduce_bench" --benchmark_format=csv \
      --benchmark_filter='^a\+=b/float32/64M/real_time/threads:2$' 2>/dev/null |
      awk -F, -v round="$round" '/^"a/ { printf "%s,%.2f\n", round, $6 / 1e9 }' >>"$out/bound.csv"
  fi
done
printf '\rcompare: %d runs in %ds%40s\n' "$total" $(($(date +%s) - start)) "" >&2

# The median of arr[key, 1..count], for the awk programs below (mawk has no
# sort: an insertion sort per group).
awk_median='function median(arr, key, count,   i, j, v, s) {
    for (i = 1; i <= count; i++) s[i] = arr[key, i] + 0
    for (i = 2; i <= count; i++) { v = s[i]; for (j = i - 1; j >= 1 && s[j] > v; j--) s[j + 1] = s[j]; s[j + 1] = v }
    return count % 2 ? s[(count + 1) / 2] : (s[count / 2] + s[count / 2 + 1]) / 2
  }
'

# Medians per library and size.
medians=$out/medians.csv
awk -F, "$awk_median"'NR > 1 {
    key = $1 "," $5; if (!(key in n)) { order[++keys] = key }
    i = ++n[key]; t[key, i] = $7; b[key, i] = $8; ti[key, i] = $9; bi[key, i] = $10
  }
  END {
    print "library,bytes,time_us,busbw_gbps,inplace_time_us,inplace_busbw_gbps"
    for (k = 1; k <= keys; k++) { key = order[k]; c = n[key]
      printf "%s,%.2f,%.3f,%.2f,%.3f\n", key, median(t, key, c), median(b, key, c), median(ti, key, c), median(bi, key, c) }
  }' "$csv" >"$medians"

# The ratio table: for each size, BASE's median time and busbw, each other
# library's, and BASE's speed over it (its time / BASE's time), out of
# place. coll is the base; with coll-shared among the peers, a second table
# takes coll-shared as the base.
ratio_table() {
  awk -F, -v base="$1" -v peers="$2" 'NR > 1 { t[$1, $2] = $3; bw[$1, $2] = $4; if (!($2 in seen)) { seen[$2] = 1; sizes[++ns] = $2 } }
  function human(b) { return b >= 1048576 ? b / 1048576 "M" : b >= 1024 ? b / 1024 "K" : b }
  END {
    np = split(peers, p, " ")
    header = "| size | " base " us | " base " busbw"; rule = "|---:|---:|---:"
    for (i = 1; i <= np; i++) { header = header " | " p[i] " us | " p[i] " busbw | " base " / " p[i]; rule = rule "|---:|---:|---:" }
    print header " |"; print rule "|"
    for (s = 1; s <= ns; s++) { z = sizes[s]
      line = sprintf("| %s | %.2f | %.3f", human(z), t[base, z], bw[base, z])
      for (i = 1; i <= np; i++) {
        pt = t[p[i], z]
        line = line sprintf(" | %.2f | %.3f | %s", pt, bw[p[i], z], (pt > 0 && t[base, z] > 0) ? sprintf("%.2fx", pt / t[base, z]) : "-")
      }
      print line " |"
    }
  }' "$medians"
}
echo
echo "# $np ranks, $dtype sum, transport $transport, median of $rounds rounds, $(date -u +%Y-%m-%d)"
{
  ratio_table coll "$peers"
  if [[ " $peers " == *" coll-shared "* ]]; then
    others=$(tr ' ' '\n' <<<"$peers" | grep -vx coll-shared | tr '\n' ' ')
    if [ -n "${others// /}" ]; then
      echo
      ratio_table coll-shared "$others"
    fi
  fi
} | tee "$out/ratios.md"

# How close the largest size comes to the bound: an allreduce of S bytes on
# 2 ranks with private buffers moves at least about 4S bytes through memory,
# so busbw (= algbw at 2 ranks) <= B/4.
if [ -s "$out/bound.csv" ]; then
  echo
  awk -F, -v libs="coll $peers" "$awk_median"'FNR == NR { b["B", ++n] = $2; next }
    FNR > 1 { if ($2 + 0 >= top) top = $2 + 0; bw[$1, $2] = $4 }
    END {
      B = median(b, "B", n)
      printf "# bound: a += b on 2 threads %.1f GB/s (median of %d rounds), so busbw <= B/4 = %.2f GB/s\n", B, n, B / 4
      k = split(libs, l, " ")
      for (i = 1; i <= k; i++) if ((l[i], top) in bw)
        printf "# %s at %d bytes: %.3f GB/s busbw, %.0f%% of the bound\n", l[i], top, bw[l[i], top], 100 * bw[l[i], top] / (B / 4)
    }' "$out/bound.csv" "$medians" | tee "$out/bound.md"
fi

# The plot: busbw against size, one line per library, PNG and SVG.
plot_data=$out/plot.dat
: >"$plot_data"
for lib in "${libs[@]}"; do
  echo "\"$lib\"" >>"$plot_data"
  awk -F, -v lib="$lib" '$1 == lib { print $2, $4 }' "$medians" >>"$plot_data"
  printf '\n\n' >>"$plot_data"
done
for term in "pngcairo size 900,540" "svg size 900,540"; do
  ext=png
  [[ $term == svg* ]] && ext=svg
  if [ "$ext" = png ] && ! gnuplot -e 'set terminal pngcairo' 2>/dev/null; then term="png size 900,540"; fi
  gnuplot <<GNUPLOT
set terminal $term
set output "$out/compare.$ext"
set title "$collective $dtype sum, $np ranks, $transport: bus bandwidth (median of $rounds rounds)"
set xlabel "message size (bytes)"
set ylabel "busbw (GB/s)"
set logscale x 2
set format x "%.0b%B"
set key left top
set grid
plot for [i=0:${#libs[@]}-1] "$plot_data" index i using 1:2 with linespoints title columnheader(1)
GNUPLOT
done
echo
echo "compare: wrote $csv, $medians, $out/ratios.md, $out/compare.png, $out/compare.svg" >&2
