#!/usr/bin/env bash
# collsim's prediction beside coll_perf's measurement, on this machine: every
# allreduce algorithm on 2, 4 and 8 ranks over shared memory, 64 KiB to 64
# MiB, with the link parameters of a tuning file (scripts/calibrate.sh).
# Writes OUT/check.csv (where, ranks, algorithm, bytes, predicted and
# measured microseconds, error; with -r again_us, again_error), its plot
# OUT/check.svg (collsim --plot-check), and prints the table and how many
# predictions fall within 20% (docs/SIMULATION.md, "Calibration"). Each
# measurement over shm is the fastest of 3 runs (CALIBRATE_ROUNDS) of 40
# iterations (CALIBRATE_ITERS), as in the calibration (scripts/fastest.sh
# says why), the runs a round of every point apart, with the ranks bound to
# the cores as the model places them (collrun --bind-to core; the emulated
# nodes' ranks are not bound).
#
#   scripts/sim-check.sh [-t TUNING] [-n "2 4 8"] [-a "ring tree ..."] [-o OUT] [-e RATE] [-r] [-b]
#   scripts/sim-check.sh -p CHECK.csv -t TUNING [-o OUT] [-b]
#     -t TUNING   the tuning file (default: calibrate first, into OUT/tuning.txt)
#     -e RATE     also 2 emulated nodes of 2 ranks at RATE (examples/clusters/
#                 emulated_2x2.json; a tuning file from calibrate.sh -e RATE)
#     -r          measure everything again after the first sweep (columns
#                 again_us, again_error): how often the machine agrees with
#                 itself within 20%, what a prediction can be held to
#     -p CHECK    measure nothing: predict CHECK.csv's points again with
#                 TUNING (another calibration, or a model changed since)
#     -b          also fit the model to the points themselves (the faster of
#                 each shm point's measurements; OUT/best/): what the model
#                 can reach on this machine, whatever the calibration
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."

tuning="" ranks="2 4 8" out=sim-check emulated="" again=0 check="" best=0
algos="ring tree halving_doubling recursive_doubling direct"
while getopts "t:n:a:o:e:p:rbh" opt; do
  case $opt in
    t) tuning=$OPTARG ;; n) ranks=$OPTARG ;; a) algos=$OPTARG ;; o) out=$OPTARG ;; e) emulated=$OPTARG ;;
    p) check=$OPTARG ;; r) again=1 ;; b) best=1 ;; h) awk 'NR > 1 && /^#/ {print; next} NR > 1 {exit}' "$0"; exit 0 ;; *) exit 2 ;;
  esac
done
# Paths as the caller gave them, from where it called.
[ -n "$out" ] && [ "${out#/}" = "$out" ] && out=$here/$out
[ -n "$tuning" ] && [ "${tuning#/}" = "$tuning" ] && tuning=$here/$tuning
[ -n "$check" ] && [ "${check#/}" = "$check" ] && check=$here/$check
if [ -n "$check" ] && { [ -z "$tuning" ] || [ ! -r "$tuning" ] || [ ! -r "$check" ]; }; then
  echo "sim-check: -p $check needs a readable check.csv and a readable tuning file (-t) to predict it with" >&2
  exit 2
fi
# The table is rewritten in OUT: one that is also the input would be lost if a prediction failed.
if [ -n "$check" ] && [ "$check" -ef "$out/check.csv" ]; then
  echo "sim-check: -p $check would be overwritten: give another folder with -o" >&2
  exit 2
fi
build=${CALIBRATE_BUILD_DIR:-build}
if [ "${CALIBRATE_NO_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh >&2
  cmake --preset release > /dev/null
  targets="coll_perf collrun collsim"
  [ -n "$check" ] && targets=collsim  # -p measures nothing
  cmake --build "$build" -j "$(nproc)" --target $targets > /dev/null
fi
mkdir -p "$out"
# -p: the points and their measurements from CHECK.
if [ -n "$check" ]; then
  awk -F, -v first="$out/measured.csv" -v second="$out/again.csv" 'BEGIN {printf "" > second}
    NR > 1 {point = $1 "," $2 "," $3 "," ($1 == "shm" ? "examples/clusters/cpu_node.json" : "examples/clusters/emulated_2x2.json") "," $4
      print point "," $6 > first
      if (NF >= 9) print point "," $8 > second}' "$check"
  [ -s "$out/again.csv" ] && again=1
fi
rm -f "$out/check.csv"  # no earlier run's table left looking current if this one fails
if [ -z "$tuning" ]; then
  tuning=$out/tuning.txt
  CALIBRATE_NO_BUILD=1 scripts/calibrate.sh -o "$tuning" ${emulated:+-e "$emulated"} > /dev/null
fi
iters=${CALIBRATE_ITERS:-40} rounds=${CALIBRATE_ROUNDS:-3}

# measure WHERE RANKS ALGORITHM CLUSTER ITERS COMMAND...: one run's "where,ranks,algorithm,cluster,bytes,us" rows.
measure() {
  local where=$1 n=$2 a=$3 cluster=$4 it=$5
  shift 5
  scripts/perf-best.sh 1 "$@" "$build/bench/coll_perf" -a "$a" -b 64K -e 64M -f 4 -n "$it" -w 3 -c 0 |
    while read -r bytes us; do echo "$where,$n,$a,$cluster,$bytes,$us"; done
}

# Over shm a point's runs are a round of every point apart, not back to back: a slow spell of a
# shared host (it can last minutes) then slows one of them, not all.
sweep() {
  for ((round = 0; round < rounds; ++round)); do
    for n in $ranks; do
      for a in $algos; do
        COLL_TRANSPORTS=shm measure shm "$n" "$a" examples/clusters/cpu_node.json "$iters" \
          "$build/tools/collrun" --bind-to core -n "$n"
      done
    done
  done | scripts/fastest.sh ,
  # 2 emulated nodes of 2 ranks: 5 iterations once (the links' rate varies little).
  if [ -n "$emulated" ]; then
    for a in ring tree halving_doubling hierarchical; do
      measure emulated 4 "$a" examples/clusters/emulated_2x2.json 5 \
        scripts/emulate-cluster.sh -k 2 -r "$emulated" -- "$build/tools/collrun" --nodes 2 -n 4
    done
  fi
}

[ -n "$check" ] || sweep > "$out/measured.csv"
header="where,ranks,algorithm,bytes,predicted_us,measured_us,error"
if [ "$again" = 1 ]; then
  [ -n "$check" ] || sweep > "$out/again.csv"
  # The same points in the same order, or the columns would pair unlike runs.
  cut -d, -f1-5 "$out/measured.csv" | cmp -s - <(cut -d, -f1-5 "$out/again.csv") ||
    { echo "sim-check: the second sweep measured other points than the first" >&2; exit 1; }
  header+=",again_us,again_error"
fi
again_file=$out/again.csv
[ "$again" = 1 ] || again_file=/dev/null
echo "$header" > "$out/check.csv"
while IFS=, read -r where n a cluster bytes measured; do
  predicted=$("$build/tools/collsim" --cluster "$cluster" --tuning "$tuning" --ranks "$n" --algo "$a" \
    --size "$bytes" < /dev/null | awk '$1 == "time" {print $2}')
  IFS=, read -r _ _ _ _ _ second <&3 || second=""
  awk -v w="$where" -v n="$n" -v a="$a" -v b="$bytes" -v p="$predicted" -v m="$measured" -v s="$second" \
    'BEGIN {printf "%s,%d,%s,%d,%.1f,%.1f,%+.3f", w, n, a, b, p, m, p / m - 1
      if (s != "") printf ",%.1f,%+.3f", s, s / m - 1
      printf "\n"}'
done < "$out/measured.csv" 3< "$again_file" >> "$out/check.csv"
rm -f "$out/measured.csv" "$out/again.csv"

awk -F, 'function off(x) {return x < 0 ? -x : x}
  NR > 1 {ok += (off($7) <= 0.2); all++
    printf "%-8s %3d  %-18s %10d  predicted %11.1f us  measured %11.1f us  %+5.0f%%", $1, $2, $3, $4, $5, $6, $7 * 100
    if (NF >= 9) {
      again = off($9) <= 0.2; both = off($5 / $8 - 1) <= 0.2 && off($7) <= 0.2
      same += again; held += both
      printf "  again %11.1f us  %+5.0f%%", $8, $9 * 100
    }
    printf "\n"}
  END {printf "within 20%%: %d of %d\n", ok, all
    if (NF >= 9)
      printf "the second sweep within 20%% of the first: %d of %d; the prediction within 20%% of both: %d\n", same, all, held}' \
  "$out/check.csv"
# The plot after the table, so that a row it cannot draw leaves the table printed.
if "$build/tools/collsim" --plot-check "$out/check.csv" --svg "$out/check.svg" > /dev/null; then
  echo "sim-check: $out/check.csv, plotted in $out/check.svg" >&2
else
  echo "sim-check: $out/check.csv (not plotted: collsim --plot-check failed, above)" >&2
  exit 1
fi

# -b: the model fitted to this sweep's own shm points (the faster of each point's measurements), and
# those points predicted with it. The cores are the calibration's; tcp's lines stay the tuning file's.
[ "$best" = 1 ] || exit 0
mkdir -p "$out/best"
awk -F, 'NR > 1 && $1 == "shm" {m = $6; if (NF >= 9 && $8 < m) m = $8; print "allreduce", $3, $2, $4, m}' \
  "$out/check.csv" > "$out/best/points.runs"
if [ ! -s "$out/best/points.runs" ]; then
  echo "sim-check: -b fits the model of CPU ranks to the points over shm, and there are none" >&2
  exit 1
fi
grep -E '^shm\.cores = ' "$tuning" > "$out/best/cores.txt" || echo "shm.cores = $(nproc)" > "$out/best/cores.txt"
{
  echo "# the model fitted to the points of $out/check.csv (scripts/sim-check.sh -b)"
  "$build/tools/collsim" --cluster examples/clusters/cpu_node.json --tuning "$out/best/cores.txt" \
    --fit "$out/best/points.runs"
  cat "$out/best/cores.txt"
  grep -E '^shm\.chunk_bytes = |^tcp\.' "$tuning" || true
} > "$out/best/tuning.txt"
CALIBRATE_NO_BUILD=1 scripts/sim-check.sh -p "$out/check.csv" -t "$out/best/tuning.txt" -o "$out/best" > "$out/best/out" 2>&1 ||
  { cat "$out/best/out" >&2; exit 1; }
sed -n 's/^within 20%: /the model fitted to these points: within 20%: /p
  s/^the second sweep within 20% of the first: .*; the prediction within 20% of both: /the model fitted to these points: within 20% of both sweeps: /p' \
  "$out/best/out"
echo "sim-check: the model fitted to these points: $out/best/tuning.txt, its table $out/best/check.csv" >&2

