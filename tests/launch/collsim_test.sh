#!/usr/bin/env bash
# collsim: what it prints for an example cluster, its timeline files, and
# its errors (which argument, what is expected).
set -euo pipefail
collsim=$1
clusters=$2
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== a prediction, with the busiest link and coll's own choice"
out=$("$collsim" --cluster "$clusters/h100_rail_32nodes.json" --ranks 16 --algo ring --size 64M --timeline "$tmp/t.csv")
for field in "time" "algbw" "busbw" "bottleneck" "auto" "timeline"; do
  grep -q "^  $field " <<<"$out" || fail "no $field line in: $out"
done
grep -q "allreduce of 67108864 bytes on 16 ranks" <<<"$out" || fail "wrong header: $out"
# Ring over 2 nodes: one NIC carries the ring's crossing, 50 GB/s; busbw can be no more.
busbw=$(sed -n 's/^  busbw *\([0-9.]*\) GB\/s$/\1/p' <<<"$out")
awk -v b="$busbw" 'BEGIN { exit !(b > 40 && b <= 50) }' || fail "ring busbw $busbw GB/s, expected 40-50"
head -1 "$tmp/t.csv" | grep -qxF "rank,step,kind,peer,bytes,start_us,end_us" || fail "csv header"
rows=$(($(wc -l < "$tmp/t.csv") - 1))
steps=$(sed -n 's/^  timeline .*(\([0-9]*\) steps)$/\1/p' <<<"$out")
[ "$rows" -eq "$steps" ] && [ "$rows" -gt 0 ] || fail "csv has $rows rows, collsim said $steps"

echo "== JSON timeline"
"$collsim" --cluster "$clusters/islands_4x4.json" --ranks 8 --size 1M --timeline "$tmp/t.json" > /dev/null
/usr/bin/python3 -c "import json, sys; rows = json.load(open(sys.argv[1])); assert rows and rows[0]['rank'] >= 0" "$tmp/t.json" ||
  fail "the JSON timeline does not parse"

echo "== a sweep: a table, the crossovers, an SVG (and a PNG where gnuplot is)"
out=$("$collsim" --cluster "$clusters/h100_rail_32nodes.json" --ranks 16 --size 16M --min-size 4K --sweep "$tmp/s.svg")
grep -q "^busbw (GB/s) by size:" <<<"$out" || fail "no sweep table: $out"
grep -q "^crossover: from [0-9]* bytes [a-z_]* is faster than [a-z_]*$" <<<"$out" || fail "no crossover: $out"
grep -q "<polyline" "$tmp/s.svg" || fail "the SVG has no lines"
if command -v gnuplot > /dev/null; then
  [ -s "$tmp/s.png" ] || fail "gnuplot is installed but no PNG was written"
fi

echo "== failures: cables counted over the whole cluster, the time to the first failure"
out=$("$collsim" --cluster "$clusters/fat_tree_100k.json" --ranks 16 --size 1M --failures 43800)
grep -qF "failures: 200000 network cables in the whole cluster (100000 NIC to leaf, 50000 leaf uplinks, 50000 pod uplinks" <<<"$out" ||
  fail "cable count: $out"
grep -qF "the first fails after 0.219 hours (13.1 minutes) on average: 43800 h / 200000" <<<"$out" || fail "first failure: $out"
grep -q "^  hierarchical " <<<"$out" || fail "no line for hierarchical: $out"

echo "== 100 000 ranks: node 0's ranks simulated for all"
out=$("$collsim" --cluster "$clusters/fat_tree_100k.json" --algo hierarchical --size 1G)
grep -q "allreduce of 1073741824 bytes on 100000 ranks" <<<"$out" || fail "100k header: $out"
grep -qF "symmetry    node 0's 8 ranks simulated, each for the 12500 ranks of its place on every node" <<<"$out" ||
  fail "no symmetry at 100k: $out"
grep -qF "bottleneck  every nic0.up link (as node0.nic0.up)" <<<"$out" || fail "100k bottleneck: $out"
busbw=$(awk '$1 == "busbw" { print $2 }' <<<"$out")
# Each rail's ring of 12 500 nodes: 25 000 messages of about 4.6 us (alpha 3 us, 4 hops, 10 KiB at 50 GB/s).
awk -v b="$busbw" 'BEGIN { exit !(b > 17 && b < 21) }' || fail "100k hierarchical busbw $busbw GB/s, expected 17-21"

echo "== 100 000 ranks of the tree: classes of ranks alike in their place in each tree"
out=$("$collsim" --cluster "$clusters/fat_tree_100k.json" --algo tree --size 1G)
grep -qF "symmetry    800 classes simulated, each for the ranks alike in their place in one of the 2 trees" <<<"$out" ||
  fail "no tree classes at 100k: $out"
grep -qF "bottleneck  the nic0.up links of nodes alike (as node1.nic0.up)" <<<"$out" || fail "100k tree bottleneck: $out"
busbw=$(awk '$1 == "busbw" { print $2 }' <<<"$out")
# An inner node's NIC sends a half to its parent and to each child: 1.5 GiB at 50 GB/s, 32 ms, and 14 levels' latency.
awk -v b="$busbw" 'BEGIN { exit !(b > 60 && b < 66) }' || fail "100k tree busbw $busbw GB/s, expected 60-66"

echo "== --explain: the rounds in words, the cost formula with its numbers, the same as an animation"
out=$("$collsim" --explain ring -n 4 --svg "$tmp/ring.svg")
grep -qxF "ring allreduce on 4 ranks, 64 bytes (16 elements of 4 bytes)" <<<"$out" || fail "explain header: $out"
[ "$(grep -c '^round ' <<<"$out")" -eq 6 ] || fail "a ring of 4 has 6 rounds: $out"
grep -qxF "  rank 3 -> rank 0: elements [12, 16) of its input, reduced into elements [12, 16) of its output" <<<"$out" ||
  fail "round 1 of the ring: $out"
grep -qxF "cost: 2(n-1) a + (n-1)/n S (2 b + g)" <<<"$out" || fail "no formula: $out"
grep -q "^  = 42.01 us by coll's cost model; simulated: 42.01 us (6 rounds)$" <<<"$out" || fail "cost and simulation: $out"
out=$("$collsim" --explain hierarchical -n 8 --per-node 4)
grep -q "a_in = " <<<"$out" || fail "hierarchical explains both links: $out"

echo "== the animation renders in a browser (headless Chromium): not blank, the reductions drawn"
command -v chromium > /dev/null || fail "chromium is not installed (scripts/install-deps.sh installs it)"
screenshot() {  # SVG PNG WIDTH,HEIGHT
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="$3" \
    --user-data-dir="$tmp/chromium" --screenshot="$2" "file://$1" > "$tmp/chromium.log" 2>&1 ||
    fail "chromium failed on $1: $(tail -5 "$tmp/chromium.log")"
}
screenshot "$tmp/ring.svg" "$tmp/ring.png" 560,600
/usr/bin/python3 - "$tmp/ring.png" <<'PY' || fail "the screenshot of the animation is blank or has no red arrows"
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
pixels = list(img.getdata())
drawn = sum(1 for p in pixels if p != (255, 255, 255))
red = sum(1 for r, g, b in pixels if r > 180 and g < 90 and b < 90)  # round 1 of the ring: reductions
print(f"{drawn} of {len(pixels)} pixels drawn, {red} red")
sys.exit(0 if drawn > 0.01 * len(pixels) and red > 200 else 1)
PY

echo "== sim-check's table as a plot: every run a point, the misses squares, and it renders"
printf '%s\n' "where,ranks,algorithm,bytes,predicted_us,measured_us,error" "shm,2,ring,65536,10.0,8.0,+0.250" \
  "shm,2,tree,65536,8.0,8.0,+0.000" "shm,4,ring,1048576,90.0,100.0,-0.100" > "$tmp/check.csv"
out=$("$collsim" --plot-check "$tmp/check.csv" --svg "$tmp/check.svg") || fail "--plot-check: $out"
grep -q "2 of 3 within 20%" <<<"$out" || fail "--plot-check's count: $out"
[ "$(grep -c '<title>shm, ' "$tmp/check.svg")" -eq 3 ] || fail "--plot-check's points: $(cat "$tmp/check.svg")"
grep -q '<rect [^>]*><title>shm, 2 ranks, ring, 64 KiB' "$tmp/check.svg" || fail "the miss is not a square"
screenshot "$tmp/check.svg" "$tmp/check.png" 800,420
/usr/bin/python3 - "$tmp/check.png" <<'PY' || fail "the screenshot of the plot is blank or has no band"
import sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
pixels = list(img.getdata())
drawn = sum(1 for p in pixels if p != (255, 255, 255))
band = sum(1 for p in pixels if p == (0xE3, 0xF2, 0xE3))  # the ±20% band
print(f"{drawn} of {len(pixels)} pixels drawn, {band} in the band")
sys.exit(0 if drawn > 0.01 * len(pixels) and band > 1000 else 1)
PY

echo "== errors name the argument"
check_error() {  # expected text, then the arguments
  local want=$1
  shift
  set +e
  err=$("$collsim" "$@" 2>&1 >/dev/null)
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "exit status $rc for $*"
  grep -qF -- "$want" <<<"$err" || fail "no '$want' in: $err"
}
check_error "--cluster FILE is required" --size 1M
check_error "--plot-check needs --svg FILE" --plot-check "$tmp/check.csv"
check_error "--plot-check draws a file alone" --plot-check "$tmp/check.csv" --svg "$tmp/x.svg" --cluster "$clusters/islands_4x4.json"
printf 'ranks,bytes\n' > "$tmp/bad.csv"
check_error "bad.csv:1: expected the header" --plot-check "$tmp/bad.csv" --svg "$tmp/bad.svg"
check_error "--algo 'nope': allreduce has" --cluster "$clusters/islands_4x4.json" --algo nope
check_error "--collective 'gather'" --cluster "$clusters/islands_4x4.json" --collective gather
check_error "cannot be read" --cluster "$tmp/none.json"
check_error "asked for; the cluster has 128 GPUs" --cluster "$clusters/islands_4x4.json" --ranks 500
check_error "--explain 'nope': allreduce has" --explain nope
check_error "3 ranks do not fill nodes of 2 evenly" --explain ring -n 3 --per-node 2
check_error "halving_doubling on 100000 ranks would simulate every rank" --cluster "$clusters/fat_tree_100k.json" \
  --algo halving_doubling
check_error "direct on 100000 ranks sends between" --cluster "$clusters/fat_tree_100k.json" --collective alltoall --size 1G
check_error "--symmetry 'maybe'" --cluster "$clusters/islands_4x4.json" --symmetry maybe
check_error "--failures needs a mean time to failure in hours" --cluster "$clusters/islands_4x4.json" --failures 0
echo "collsim_test: all passed"
