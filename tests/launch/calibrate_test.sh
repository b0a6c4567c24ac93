#!/usr/bin/env bash
# scripts/calibrate.sh end to end, briefly (3 iterations, 1 round, 4 ranks):
# a tuning file of both classes that collsim and the selector both read, and
# collsim --fit's refusals. What the fit is worth is docs/SIMULATION.md's
# (scripts/sim-check.sh); here only that each part does its job.
set -euo pipefail
build=$1
source_dir=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$source_dir"

echo "== calibrate: shm fitted by the simulator, tcp by a line"
# On one CPU of those allowed: the ranks are bound there, and the model's cores are that one.
first=$(taskset -cp $$ | sed 's/.*: *//; s/[-,].*//')
CALIBRATE_NO_BUILD=1 CALIBRATE_BUILD_DIR=$build CALIBRATE_ITERS=3 CALIBRATE_ROUNDS=1 taskset -c "$first" \
  scripts/calibrate.sh -n 4 -o "$tmp/tuning.txt" > "$tmp/out" 2> "$tmp/err" || fail "calibrate: $(cat "$tmp/err")"
grep -q "^shm.cores = 1$" "$tmp/tuning.txt" || fail "on one CPU: $(grep cores "$tmp/tuning.txt")"
for key in shm.alpha_us shm.beta_ns_per_byte shm.cache_bytes shm.cache_beta_ns_per_byte shm.cache2_bytes \
  shm.cache2_beta_ns_per_byte shm.node_beta_ns_per_byte shm.cores shm.local_weight shm.reduce_weight \
  shm.same_core_read_weight shm.turn_us \
  shm.gamma_ns_per_byte shm.chunk_bytes tcp.alpha_us tcp.beta_ns_per_byte tcp.gamma_ns_per_byte tcp.chunk_bytes; do
  grep -Eq "^$key = [0-9.e+-]+$" "$tmp/tuning.txt" || fail "no $key line in: $(cat "$tmp/tuning.txt")"
done
# The fit's table: 11 sizes of five runs, each predicted beside its measurement.
[ "$(grep -c '^#   .* predicted .* measured ' "$tmp/tuning.txt")" -eq 55 ] || fail "the fit's table: $(cat "$tmp/tuning.txt")"
grep -q "^# root mean square of log(predicted / measured) [0-9.]*$" "$tmp/tuning.txt" || fail "no fit error line"

echo "== collsim reads it: the cluster's links are the file's"
out=$("$build/tools/collsim" --cluster examples/clusters/cpu_node.json --tuning "$tmp/tuning.txt" --ranks 4 \
  --algo ring --size 16M)
grep -q "^  time " <<<"$out" || fail "collsim with the tuning file: $out"
alpha=$(sed -n 's/^shm.alpha_us = //p' "$tmp/tuning.txt")
turn=$(sed -n 's/^shm.turn_us = //p' "$tmp/tuning.txt")
# A 4-byte broadcast on 2 ranks is one message: alpha, the receiver's turn on the one core the two
# share, and 4 bytes' worth of time. That last is the fit's too (a noisy fit's cache beta made it 0.05 us),
# so it is the same file's time with alpha and the turn at 0.
broadcast4() {
  "$build/tools/collsim" --cluster examples/clusters/cpu_node.json --tuning "$1" --ranks 2 --collective broadcast \
    --size 4 | sed -n 's/^  time *\([0-9.]*\) us$/\1/p'
}
sed -e 's/^shm.alpha_us = .*/shm.alpha_us = 0/' -e 's/^shm.turn_us = .*/shm.turn_us = 0/' "$tmp/tuning.txt" > "$tmp/no_latency.txt"
one=$(broadcast4 "$tmp/tuning.txt")
bytes_only=$(broadcast4 "$tmp/no_latency.txt")
# (Times are printed to 3 decimals, alpha and the turn to 6 digits.)
awk -v t="$one" -v b="$bytes_only" -v a="$alpha" -v w="$turn" \
  'BEGIN { d = t - b - a - w; exit !(t != "" && b != "" && w > 0 && d > -0.0011 && d < 0.0011) }' ||
  fail "a 4-byte message took $one us, $bytes_only us without latency: alpha $alpha and the turn $turn apart"
untuned=$("$build/tools/collsim" --cluster examples/clusters/cpu_node.json --ranks 2 --collective broadcast --size 4 |
  sed -n 's/^  time *\([0-9.]*\) us$/\1/p')
[ -n "$untuned" ] && [ "$untuned" != "$one" ] || fail "without the tuning file '$untuned' us, with it $one us: it changed nothing"

echo "== the selector reads it: a real run with COLL_TUNING_FILE"
COLL_TUNING_FILE=$tmp/tuning.txt COLL_DEBUG=INFO COLL_DEBUG_SUBSYS=COLL "$build/tools/collrun" -n 2 \
  "$build/bench/coll_perf" -b 1M -e 1M -n 2 -w 1 > "$tmp/perf" 2>&1 || fail "coll_perf with the tuning file: $(cat "$tmp/perf")"
grep -q "allreduce of ~1048576 bytes on 2 ranks (shm): .* (cost model)" "$tmp/perf" || fail "no choice logged: $(cat "$tmp/perf")"
# The file also names tcp: a job on shared memory alone passes its lines over.
COLL_TRANSPORTS=shm COLL_TUNING_FILE=$tmp/tuning.txt "$build/tools/collrun" -n 2 "$build/bench/coll_perf" -b 1M -e 1M \
  -n 2 -w 1 > "$tmp/perf" 2>&1 || fail "COLL_TRANSPORTS=shm with the tuning file: $(cat "$tmp/perf")"

echo "== sim-check: each size predicted beside its measurement, twice with -r"
CALIBRATE_NO_BUILD=1 CALIBRATE_BUILD_DIR=$build CALIBRATE_ITERS=2 CALIBRATE_ROUNDS=1 \
  scripts/sim-check.sh -n 2 -a ring -r -t "$tmp/tuning.txt" -o "$tmp/check" > "$tmp/out" 2> "$tmp/err" ||
  fail "sim-check: $(cat "$tmp/err")"
[ "$(head -1 "$tmp/check/check.csv")" = "where,ranks,algorithm,bytes,predicted_us,measured_us,error,again_us,again_error" ] ||
  fail "sim-check's header: $(head -1 "$tmp/check/check.csv")"
# 64 KiB to 64 MiB by 4: six sizes, each with two positive times beside its prediction.
[ "$(grep -cE '^shm,2,ring,[0-9]+,[0-9.]+,[0-9.]+,[-+][0-9.]+,[0-9.]+,[-+][0-9.]+$' "$tmp/check/check.csv")" -eq 6 ] ||
  fail "sim-check's rows: $(cat "$tmp/check/check.csv")"
grep -qE "^within 20%: [0-6] of 6$" "$tmp/out" && grep -qE "^the second sweep within 20% of the first: [0-6] of 6;" "$tmp/out" ||
  fail "sim-check's summary: $(tail -3 "$tmp/out")"
grep -qE "collsim against coll_perf: [0-6] of 6 within 20%" "$tmp/check/check.svg" &&
  [ "$(grep -c '<title>shm, 2 ranks, ring, ' "$tmp/check/check.svg")" -eq 6 ] ||
  fail "sim-check's plot: $(head -c 600 "$tmp/check/check.svg")"

echo "== sim-check -p: the same points predicted again with another file, nothing measured"
CALIBRATE_NO_BUILD=1 CALIBRATE_BUILD_DIR=$build \
  scripts/sim-check.sh -p "$tmp/check/check.csv" -t "$tmp/no_latency.txt" -o "$tmp/again" > "$tmp/out" 2> "$tmp/err" ||
  fail "sim-check -p: $(cat "$tmp/err")"
# The measurements are the check's, to the digit; the predictions are the file's, none slower without
# alpha and the turn, and most faster (printed to 0.1 us, a large size's can come out the same).
diff <(cut -d, -f1-4,6,8 "$tmp/check/check.csv") <(cut -d, -f1-4,6,8 "$tmp/again/check.csv") > /dev/null ||
  fail "sim-check -p measured anew or lost a column: $(cat "$tmp/again/check.csv")"
paste -d, "$tmp/check/check.csv" "$tmp/again/check.csv" |
  awk -F, 'NR > 1 {bad += $14 > $5; faster += $14 < $5} END {exit bad > 0 || faster < 3}' ||
  fail "sim-check -p did not predict with the file it was given: $(cat "$tmp/again/check.csv")"
if CALIBRATE_NO_BUILD=1 CALIBRATE_BUILD_DIR=$build scripts/sim-check.sh -p "$tmp/check/check.csv" -o "$tmp/again" \
  > /dev/null 2> "$tmp/err"; then
  fail "sim-check -p without a tuning file was accepted"
fi
grep -q "needs a readable check.csv and a readable tuning file" "$tmp/err" || fail "sim-check -p without -t: $(cat "$tmp/err")"
# The table it would write over is its input: refused, and the input is kept.
cp "$tmp/again/check.csv" "$tmp/kept.csv"
if CALIBRATE_NO_BUILD=1 CALIBRATE_BUILD_DIR=$build scripts/sim-check.sh -p "$tmp/again/check.csv" -t "$tmp/tuning.txt" \
  -o "$tmp/again" > /dev/null 2> "$tmp/err"; then
  fail "sim-check -p over its own input was accepted"
fi
grep -q "would be overwritten" "$tmp/err" && cmp -s "$tmp/kept.csv" "$tmp/again/check.csv" ||
  fail "sim-check -p over its own input: $(cat "$tmp/err")"

echo "== sim-check -b: the model fitted to the points themselves"
CALIBRATE_NO_BUILD=1 CALIBRATE_BUILD_DIR=$build \
  scripts/sim-check.sh -p "$tmp/check/check.csv" -t "$tmp/tuning.txt" -o "$tmp/best" -b > "$tmp/out" 2> "$tmp/err" ||
  fail "sim-check -b: $(cat "$tmp/err")"
# Fitted to the six points it predicts (the faster of each point's two), on the calibration's one core.
diff <(awk -F, 'NR > 1 {m = $6 < $8 ? $6 : $8; print "allreduce ring 2", $4, m}' "$tmp/check/check.csv") \
  "$tmp/best/best/points.runs" > /dev/null || fail "sim-check -b's points: $(cat "$tmp/best/best/points.runs")"
[ "$(wc -l < "$tmp/best/best/points.runs")" -eq 6 ] && grep -q "^shm.cores = 1$" "$tmp/best/best/tuning.txt" &&
  grep -Eq "^shm.alpha_us = [0-9.e+-]+$" "$tmp/best/best/tuning.txt" && grep -q "^tcp.alpha_us = " "$tmp/best/best/tuning.txt" ||
  fail "sim-check -b's tuning file: $(cat "$tmp/best/best/tuning.txt")"
grep -qE "^the model fitted to these points: within 20%: [0-6] of 6$" "$tmp/out" &&
  grep -qE "^the model fitted to these points: within 20% of both sweeps: [0-6]$" "$tmp/out" ||
  fail "sim-check -b's summary: $(tail -4 "$tmp/out")"

echo "== errors name the file and line"
printf 'allgather ring 2 65536\n' > "$tmp/bad.runs"
if err=$("$build/tools/collsim" --cluster examples/clusters/cpu_node.json --fit "$tmp/bad.runs" 2>&1); then
  fail "a bad runs file was accepted"
fi
grep -q "bad.runs:1: expected 'collective algorithm ranks bytes microseconds'" <<<"$err" || fail "$err"
printf 'shm.alpha = 3\n' > "$tmp/bad.txt"
if err=$("$build/tools/collsim" --cluster examples/clusters/cpu_node.json --tuning "$tmp/bad.txt" 2>&1); then
  fail "a bad tuning file was accepted"
fi
grep -q "bad.txt:1: unknown parameter 'shm.alpha'" <<<"$err" || fail "$err"
echo "calibrate_test: ok"
