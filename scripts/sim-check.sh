#!/usr/bin/env bash
# collsim's prediction beside coll_perf's measurement, on this machine: every
# allreduce algorithm on 2, 4 and 8 ranks over shared memory, 64 KiB to 64
# MiB, with the link parameters of a tuning file (scripts/calibrate.sh).
# Writes OUT/check.csv (where, ranks, algorithm, bytes, predicted and
# measured microseconds, error) and prints the table and how many predictions fall
# within 20% (docs/SIMULATION.md, "Calibration"). Each measurement is the
# fastest of 3 runs (CALIBRATE_ROUNDS) of 40 iterations (CALIBRATE_ITERS), as
# in the calibration (scripts/perf-best.sh says why).
#
#   scripts/sim-check.sh [-t TUNING] [-n "2 4 8"] [-a "ring tree ..."] [-o OUT] [-e RATE]
#     -t TUNING   the tuning file (default: calibrate first, into OUT/tuning.txt)
#     -e RATE     also 2 emulated nodes of 2 ranks at RATE (examples/clusters/
#                 emulated_2x2.json; a tuning file from calibrate.sh -e RATE)
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."

tuning="" ranks="2 4 8" out=sim-check emulated=""
algos="ring tree halving_doubling recursive_doubling direct"
while getopts "t:n:a:o:e:h" opt; do
  case $opt in
    t) tuning=$OPTARG ;; n) ranks=$OPTARG ;; a) algos=$OPTARG ;; o) out=$OPTARG ;; e) emulated=$OPTARG ;;
    h) sed -n '2,14p' "$0"; exit 0 ;; *) exit 2 ;;
  esac
done
# Paths as the caller gave them, from where it called.
[ -n "$out" ] && [ "${out#/}" = "$out" ] && out=$here/$out
[ -n "$tuning" ] && [ "${tuning#/}" = "$tuning" ] && tuning=$here/$tuning
build=${CALIBRATE_BUILD_DIR:-build}
if [ "${CALIBRATE_NO_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh >&2
  cmake --preset release > /dev/null
  cmake --build "$build" -j "$(nproc)" --target coll_perf collrun collsim > /dev/null
fi
mkdir -p "$out"
if [ -z "$tuning" ]; then
  tuning=$out/tuning.txt
  CALIBRATE_NO_BUILD=1 scripts/calibrate.sh -o "$tuning" ${emulated:+-e "$emulated"} > /dev/null
fi
iters=${CALIBRATE_ITERS:-40} rounds=${CALIBRATE_ROUNDS:-3}

# check WHERE RANKS ALGORITHM CLUSTER ROUNDS ITERS COMMAND...: COMMAND's sizes, measured and predicted, as rows.
check() {
  local where=$1 n=$2 a=$3 cluster=$4 times=$5 it=$6
  shift 6
  scripts/perf-best.sh "$times" "$@" "$build/bench/coll_perf" -a "$a" -b 64K -e 64M -f 4 -n "$it" -w 3 -c 0 |
    while read -r bytes measured; do
      predicted=$("$build/tools/collsim" --cluster "$cluster" --tuning "$tuning" --ranks "$n" --algo "$a" \
        --size "$bytes" | awk '$1 == "time" {print $2}')
      awk -v w="$where" -v n="$n" -v a="$a" -v b="$bytes" -v p="$predicted" -v m="$measured" \
        'BEGIN {printf "%s,%d,%s,%d,%.1f,%.1f,%+.3f\n", w, n, a, b, p, m, p / m - 1}'
    done >> "$out/check.csv"
}

echo "where,ranks,algorithm,bytes,predicted_us,measured_us,error" > "$out/check.csv"
for n in $ranks; do
  for a in $algos; do
    COLL_TRANSPORTS=shm check shm "$n" "$a" examples/clusters/cpu_node.json "$rounds" "$iters" \
      "$build/tools/collrun" -n "$n"
  done
done
# 2 emulated nodes of 2 ranks: 5 iterations once (the links' rate varies little).
if [ -n "$emulated" ]; then
  for a in ring tree halving_doubling hierarchical; do
    check emulated 4 "$a" examples/clusters/emulated_2x2.json 1 5 \
      scripts/emulate-cluster.sh -k 2 -r "$emulated" -- "$build/tools/collrun" --nodes 2 -n 4
  done
fi
awk -F, 'NR > 1 {e = $7 < 0 ? -$7 : $7; ok += (e <= 0.2); all++
    printf "%-8s %3d  %-18s %10d  predicted %11.1f us  measured %11.1f us  %+5.0f%%\n", $1, $2, $3, $4, $5, $6, $7 * 100}
  END {printf "within 20%%: %d of %d\n", ok, all}' "$out/check.csv"
echo "sim-check: $out/check.csv" >&2
