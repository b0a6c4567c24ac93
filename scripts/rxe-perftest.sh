#!/usr/bin/env bash
# coll's point-to-point over ib against perftest, between two Soft-RoCE
# guests (tests/rxe/guest.sh), side by side in one run: ib_write_lat and
# coll_p2p -l at 8 bytes (put, half round trip), ib_write_bw and coll_p2p
# at 1 and 4 MiB (put, 16 in flight), alternating, ROUNDS times. Prints
# both tables and the ratios (coll's bandwidth over perftest's; coll's
# typical latency over perftest's). On a real fabric, run the same two
# programs by hand (docs/TRANSPORTS.md, "InfiniBand and RoCE (verbs)").
#
#   scripts/rxe-perftest.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
rounds=${2:-2}
out=$(mktemp -d "$build/rxe-perftest.XXXXXX")
trap '[ $? -eq 0 ] && rm -rf "$out"' EXIT

cat > "$out/node.sh" <<SCRIPT
set -u
build=$build out=$out rounds=$rounds
env_of() { echo RANK=\$RXE_NODE WORLD_SIZE=2 MASTER_ADDR=10.10.0.1 MASTER_PORT=\$1 COLL_JOB_SECRET=00112233445566778899aabbccddeeff; }
gid=\$(grep -l 0a0a "/sys/class/infiniband/rxe0/ports/1/gids/"* | head -1 | sed 's|.*/||')
peer=""; [ "\$RXE_NODE" = 1 ] && peer=10.10.0.1
for r in \$(seq \$rounds); do
  [ -n "\$peer" ] && sleep 2
  ib_write_lat -d rxe0 -x \$gid -s 8 -n 300 -F \$peer > \$out/lat_perftest.\$RXE_NODE.\$r 2>&1
  [ -n "\$peer" ] && sleep 2
  env \$(env_of \$((29400 + r))) \$build/bench/coll_p2p -t ib -m put -l -b 8 -e 8 -n 300 -w 20 > \$out/lat_coll.\$RXE_NODE.\$r 2>&1
  for size in 1048576 4194304; do
    [ -n "\$peer" ] && sleep 2
    ib_write_bw -d rxe0 -x \$gid -s \$size -n 20 -F --report_gbits \$peer > \$out/bw_perftest.\$size.\$RXE_NODE.\$r 2>&1
    [ -n "\$peer" ] && sleep 2
    env \$(env_of \$((29500 + r * 10 + size / 1048576))) \$build/bench/coll_p2p -t ib -m put -b \$size -e \$size -n 20 -w 2 -d 16 > \$out/bw_coll.\$size.\$RXE_NODE.\$r 2>&1
  done
done
SCRIPT
"$src/tests/rxe/guest.sh" --nodes 2 --timeout 1200 --rw "$build" -- "bash $out/node.sh" "bash $out/node.sh" > "$out/guests.log" 2>&1 ||
  { cat "$out/guests.log"; echo "rxe-perftest: the runs' output is in $out"; exit 1; }

row() { awk -v s="$2" '$1 == s {print; exit}' "$1"; }
echo "# coll_p2p (put over ib) against perftest between two Soft-RoCE guests, $rounds round(s)"
echo "# round  test                perftest                 coll                 ratio"
for r in $(seq "$rounds"); do
  p=$(row "$out/lat_perftest.0.$r" 8 | awk '{print $5}')   # t_typical
  c=$(row "$out/lat_coll.0.$r" 8 | awk '{print $5}')
  printf "  %-5s  %-18s  %10s us  %16s us  %8s (coll/perftest, at most 1.5)\n" "$r" "latency 8 B" "$p" "$c" \
    "$(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.2f", a / b}')"
  for size in 1048576 4194304; do
    p=$(row "$out/bw_perftest.$size.0.$r" "$size" | awk '{print $4}')  # BW average
    c=$(row "$out/bw_coll.$size.0.$r" "$size" | awk '{print $4}')
    printf "  %-5s  %-18s  %10s Gb/s  %14s Gb/s  %8s (coll/perftest, at least 0.9)\n" "$r" "bandwidth $((size >> 20)) MiB" \
      "$p" "$c" "$(awk -v a="$c" -v b="$p" 'BEGIN {printf "%.2f", a / b}')"
  done
done
echo "# the tables, round 1:"
cat "$out/lat_perftest.0.1" "$out/lat_coll.0.1" "$out/bw_perftest.1048576.0.1" "$out/bw_coll.1048576.0.1" | grep -v "^\s*$"
