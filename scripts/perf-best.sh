#!/usr/bin/env bash
# Runs a coll_perf command ROUNDS times and prints each size's fastest time
# (scripts/fastest.sh says why the fastest): "bytes microseconds" lines
# (out-of-place), for scripts/calibrate.sh and scripts/sim-check.sh.
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
done | "$(dirname "$0")/fastest.sh"
