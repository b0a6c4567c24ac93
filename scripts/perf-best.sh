#!/usr/bin/env bash
# Runs a coll_perf command ROUNDS times and prints each size's fastest time:
# "bytes microseconds" lines (out-of-place), for scripts/calibrate.sh and
# scripts/sim-check.sh. On a shared machine a neighbour only ever adds time,
# and the model describes the machine undisturbed: the fastest round is
# its best estimate (perftest's t_min, for the same reason).
#
#   scripts/perf-best.sh ROUNDS COMMAND...    # COMMAND runs coll_perf
set -euo pipefail
if [ $# -lt 2 ] || ! [[ $1 =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/perf-best.sh ROUNDS COMMAND..." >&2
  exit 2
fi
rounds=$1
shift
for ((round = 0; round < rounds; ++round)); do
  "$@" | awk '$1 ~ /^[0-9]+$/ && $1 > 0 {print $1, $6}'
done | sort -k1,1n -k2,2g | awk '$1 != last {print; last = $1}'
