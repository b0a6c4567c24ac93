#!/usr/bin/env bash
# Fits the alpha-beta-gamma link parameters of this machine's transports
# from coll_perf runs, and writes them as a tuning file: the format
# COLL_TUNING_FILE gives the selector and collsim --tuning reads
# (docs/ALGORITHMS.md, "Selection"; docs/SIMULATION.md, "Calibration").
#
#   scripts/calibrate.sh [-o FILE] [-n RANKS] [-e RATE]
#     -o FILE   the tuning file (default tuning.txt); FILE.runs: the shm runs
#               measured, for collsim --fit again
#     -n RANKS  ranks of the node-wide fit (default 8)
#     -e RATE   tcp measured between two emulated nodes with links of RATE
#               (scripts/emulate-cluster.sh, root), not over loopback
#
# Sizes S of 64 KiB to 64 MiB (tcp's alpha: 8 bytes, 200 iterations), ring
# algorithms unless named:
#   shm   2-rank allgather and allreduce, RANKS-rank allgather, RANKS-rank
#         halving-doubling allreduce (messages between ranks of one core,
#         where the ranks outnumber the cores) and 2-rank direct allreduce
#         (local copies), given to collsim
#         --fit: the parameters with which the simulator reproduces them
#         best (alpha, beta, two caches' bytes and beta, the node's memory,
#         gamma, the weights of local copies, of reductions and of reads
#         within a core, the turn of a rank on a shared core;
#         docs/SIMULATION.md, "Calibration"), with the ranks
#         on the cores they are bound to (shm.cores: the CPUs allowed, nproc)
#   tcp   alpha from the 2-rank allgather of 8 bytes (at least shm's),
#         beta from the 2-rank allgather from 1 MiB, t = alpha + (S/2) beta
#         by least squares on the relative error; gamma from
#         the 2-rank allreduce, t = 2 alpha + S beta + (S/2) gamma (0 if
#         negative, and with -e where the link is slower than the CPU's
#         reduction, which then hides behind it, chunk by chunk); with -e
#         node_beta, the node's one link that its 2 ranks share (a 4-rank
#         allgather alternating between the nodes), which the selector reads
# chunk_bytes is the transport's own (128 KiB shm, 512 KiB tcp).
set -euo pipefail
here=$PWD
cd "$(dirname "$0")/.."

out=tuning.txt ranks=8 emulated=""
while getopts "o:n:e:h" opt; do
  case $opt in
    o) out=$OPTARG ;; n) ranks=$OPTARG ;; e) emulated=$OPTARG ;;
    h) sed -n '2,/^# chunk_bytes/p' "$0"; exit 0 ;; *) exit 2 ;;
  esac
done
# Paths as the caller gave them, from where it called.
[ -n "$out" ] && [ "${out#/}" = "$out" ] && out=$here/$out
# examples/clusters/cpu_node.json, which the fit simulates, holds 8.
if ! [[ $ranks =~ ^[0-9]+$ ]] || [ "$ranks" -lt 3 ] || [ "$ranks" -gt 8 ]; then
  echo "calibrate: -n $ranks: between 3 and 8 ranks" >&2
  exit 2
fi

build=${CALIBRATE_BUILD_DIR:-build}
if [ "${CALIBRATE_NO_BUILD:-0}" != 1 ]; then
  scripts/install-deps.sh >&2
  cmake --preset release > /dev/null
  cmake --build "$build" -j "$(nproc)" --target coll_perf collrun collsim > /dev/null
fi
iters=${CALIBRATE_ITERS:-40} rounds=${CALIBRATE_ROUNDS:-3}
runs_each=$rounds  # measure's runs of a point; 1 where the rounds spread them (shm, below)

# measure TRANSPORT RANKS COLLECTIVE [ALGORITHM [SIZE]]: "bytes time_us" lines,
# each size's fastest over $runs_each runs (scripts/perf-best.sh), results
# unchecked (the tests check them); 64 KiB to 64 MiB, or SIZE alone, in many
# short iterations.
measure() {
  local transport=$1 n=$2 collective=$3 algorithm=${4:-ring} size=${5:-}
  # Each rank on a core of its own, or sharing in turn (rank r on core r mod C), as the fit's model has them:
  # left to the kernel, ranks that share cores land differently from run to run, and run at other speeds.
  local -a launch=("$build/tools/collrun" --bind-to core -n "$n")
  if [ "$transport" = tcp-emulated ] || [ "$transport" = tcp-emulated-shared ]; then
    launch=(scripts/emulate-cluster.sh -k 2 -r "$emulated" -- "$build/tools/collrun" --nodes 2 -n "$n")
    # Ranks alternating over the nodes in a ring in launcher order: every message crosses, and each
    # node's ranks send at once through its one link.
    [ "$transport" = tcp-emulated-shared ] &&
      launch=(scripts/emulate-cluster.sh -k 2 -r "$emulated" -- env COLL_TOPO_AWARE=0
        "$build/tools/collrun" --nodes 2 --placement cyclic -n "$n")
    transport=tcp
  fi
  local -a sweep=(-b 64K -e 64M -f 2 -n "$iters" -w 5) times=$runs_each
  # Through the emulated links a size takes up to half a second and varies little: fewer, once.
  [ "${launch[0]}" = scripts/emulate-cluster.sh ] && sweep=(-b 64K -e 64M -f 4 -n 5 -w 1) times=1 &&
    [ "$collective" = allgather ] && [ "$n" -gt 2 ] && sweep=(-b 4M -e 64M -f 4 -n 3 -w 1)
  [ -n "$size" ] && sweep=(-b "$size" -e "$size" -n 200 -w 20)
  COLL_TRANSPORTS=$transport scripts/perf-best.sh "$times" "${launch[@]}" "$build/bench/coll_perf" \
    -C "$collective" -a "$algorithm" "${sweep[@]}" -c 0
}

# slope FILE MIN K ALPHA [BETA]: weighted least squares (weight 1/t^2, so that each point's relative
# error counts) of t = K ALPHA + S BETA + (S/2) b over the file's "S t" lines from S = MIN; b in ns a
# byte (ALPHA in us, BETA in ns a byte; BETA 0 where not given).
slope() {
  awk -v min="$2" -v k="$3" -v a="$4" -v b="${5:-0}" '$1 >= min {x = $1 / 2; t = $2; w = 1 / (t * t)
      sxr += w * x * (t - k * a - $1 * b / 1000); sxx += w * x * x}
    END {if (sxx == 0) {print "calibrate: no runs from " min " bytes in " FILENAME > "/dev/stderr"; exit 1}
      printf "%.6g\n", sxr / sxx * 1000}' "$1"
}

tmp=$(mktemp -d)
trap '[ -n "${CALIBRATE_KEEP:-}" ] && cp -r "$tmp" "$CALIBRATE_KEEP"; rm -rf "$tmp"' EXIT
{
  echo "# coll link parameters, fitted by scripts/calibrate.sh on $(hostname) ($(nproc) cores), $(date -u +%F)"
  echo "# from coll_perf, float32 sum, 64 KiB .. 64 MiB, $iters iterations a size, the fastest of $rounds runs" \
    "(tcp's alpha: 8 bytes, 200 iterations)"
  if [ -n "$emulated" ]; then where="between 2 emulated nodes at $emulated"; else where="over loopback"; fi
  echo "# transports: shm over this node; tcp $where"
} > "$tmp/out"
# shm: the simulator fits its node class to runs on this node (collsim --fit).
echo "calibrate: shm: 2-rank allgather and allreduce, $ranks-rank allgather and halving-doubling," \
  "2-rank direct allreduce" >&2
# Its $rounds runs a round of all five apart, not back to back: a slow spell of a shared host (it
# can last minutes) then slows one run of a point, not all of them.
runs_each=1
for ((round = 0; round < rounds; ++round)); do
  measure shm 2 allgather | sed 's/^/allgather ring 2 /'
  measure shm 2 allreduce | sed 's/^/allreduce ring 2 /'
  measure shm "$ranks" allgather | sed "s/^/allgather ring $ranks /"
  measure shm "$ranks" allreduce halving_doubling | sed "s/^/allreduce halving_doubling $ranks /"
  measure shm 2 allreduce direct | sed 's/^/allreduce direct 2 /'
done | scripts/fastest.sh > "$out.runs"
runs_each=$rounds
# The ranks share this machine's cores (8 ranks on 2 take turns): given, not fitted.
# nproc: the CPUs this process may use, which collrun --bind-to core places the ranks on (under a
# taskset or a cpuset fewer than the machine has).
echo "shm.cores = $(nproc)" > "$tmp/cores"
"$build/tools/collsim" --cluster examples/clusters/cpu_node.json --tuning "$tmp/cores" --fit "$out.runs" >> "$tmp/out"
{
  cat "$tmp/cores"
  echo "shm.chunk_bytes = 131072"
} >> "$tmp/out"
# tcp: between two ranks (over loopback, or between emulated nodes).
transport=tcp
[ -n "$emulated" ] && transport=tcp-emulated
echo "calibrate: tcp: 2-rank allgather and allreduce${emulated:+ between emulated nodes}" >&2
measure "$transport" 2 allgather ring 8 > "$tmp/tcp.lat"
measure "$transport" 2 allgather > "$tmp/tcp.ag2"
measure "$transport" 2 allreduce > "$tmp/tcp.ar2"
# Alpha is the 2-rank allgather of 8 bytes (a message each way), at least shm's: a message to another
# node costs its sender what one inside does. Fitted as the intercept of the large sizes' line instead,
# it came out 0.5 to 1.1 ms between emulated nodes (2026-12-06), where 8 bytes take 14 to 30 us: the
# link's rate ramps up over the first megabytes, which is not a cost of every message.
read -r _ latency < "$tmp/tcp.lat" || { echo "calibrate: tcp: the 8-byte allgather gave no time" >&2; exit 1; }
shm_alpha=$(sed -n 's/^shm.alpha_us = //p' "$tmp/out")
alpha=$(awk -v a="$latency" -v s="$shm_alpha" 'BEGIN {printf "%.6g\n", (a > s ? a : s)}')
# Beta from 1 MiB, where the rate is the link's: fitted from 64 KiB between emulated nodes, beta came
# out faster than the 1 Gbit/s link itself (7.80 ns/B for its 8.0) and every size from 1 MiB 6-14%
# slower than predicted.
beta=$(slope "$tmp/tcp.ag2" 1048576 1 "$alpha")
# gamma: t - 2 alpha - S beta = (S/2) g, weighted least squares of g, at least 0. Between emulated
# nodes, 0 where the link is slower than the CPU's reduction (at most the time a byte of the largest
# 2-rank allreduce over shm, measured: the fitted rate beyond the caches is free where a fitted cache
# holds every run, and came out 14 ns/B in one CI run):
# each chunk's reduction then runs while the next chunk crosses the link, and what the fit finds is the
# runs' noise. At 1 Gbit/s it came out from -1.7 to -0.7 ns a byte in four calibrations and +0.69 in
# another (2026-12-06: the allreduce of 1 and 4 MiB 15% and 7% slower than 2 alpha + S beta, of 64 MiB
# 2.5% faster), and positive it makes the selector pick halving-doubling at 64 MiB for the reduction it
# saves, where the tree is faster. Over loopback the link is the receiver's own core copying, which the
# reduction shares: there the fit stays.
gamma=$(slope "$tmp/tcp.ar2" 1048576 2 "$alpha" "$beta")
cpu_reduce=$(awk '$1 == "allreduce" && $2 == "ring" && $3 == 2 && $4 >= s {s = $4; t = $5}
  END {if (s == "") {print "calibrate: no 2-rank allreduce over shm in " FILENAME > "/dev/stderr"; exit 1}
    printf "%.6g\n", t * 1000 / s}' "$out.runs")
gamma=$(awk -v g="$gamma" -v b="$beta" -v c="$cpu_reduce" -v e="$emulated" \
  'BEGIN {printf "%.6g\n", (g < 0 || (e != "" && b > c)) ? 0 : g}')
{
  echo "# tcp: alpha from the 2-rank allgather of 8 bytes (at least shm's), beta from 1 MiB, t = alpha + (S/2) beta;"
  if [ -n "$emulated" ]; then
    echo "# gamma from the allreduce, 0 where the link is slower than the CPU's reduction ($cpu_reduce ns/B)"
  else
    echo "# gamma from the allreduce (over loopback the receiver's core copies and reduces: both count)"
  fi
  echo "tcp.alpha_us = $alpha"
  echo "tcp.beta_ns_per_byte = $beta"
  echo "tcp.gamma_ns_per_byte = $gamma"
  echo "tcp.chunk_bytes = 524288"
} >> "$tmp/out"
if [ -n "$emulated" ]; then
  # node_beta: 4 ranks alternating over the 2 nodes, a flat ring's allgather, every message between
  # nodes and each node's 2 ranks sending at once: a node sends 2 (3/4) S in t - 3 alpha.
  echo "calibrate: tcp: 4-rank allgather, each node's 2 ranks sending at once" >&2
  measure tcp-emulated-shared 4 allgather > "$tmp/tcp.ag4"
  awk -v a="$alpha" '$1 >= 4194304 {printf "%.9g\n", ($2 - 3 * a) / (1.5 * $1) * 1000}' "$tmp/tcp.ag4" | sort -g |
    awk '{v[++k] = $1} END {if (k > 0) {
      print "# tcp: node_beta from a 4-rank allgather over both nodes, 2 ranks of a node sending at once (median)"
      printf "tcp.node_beta_ns_per_byte = %.6g\n", v[int((k + 1) / 2)]}}' >> "$tmp/out"
fi
cp "$tmp/out" "$out"
cat "$out"
echo "calibrate: wrote $out (COLL_TUNING_FILE=$out for the selector; collsim --tuning $out)" >&2
