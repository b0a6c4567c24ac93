#!/usr/bin/env bash
# Reads "KEY... TIME" lines and prints each KEY's least TIME, the KEYs in the
# order they first came: the fastest of several runs of the same points
# (scripts/perf-best.sh, calibrate.sh, sim-check.sh). On a shared machine a
# neighbour only ever adds time, and the model describes the machine
# undisturbed: the fastest run is its best estimate (perftest's t_min, for
# the same reason).
#
#   ... | scripts/fastest.sh [SEPARATOR]    # SEPARATOR: the fields' (default: blanks)
set -euo pipefail
sep=${1:-}
awk ${sep:+-F "$sep"} -v OFS="${sep:- }" '
  {k = $1; for (i = 2; i < NF; ++i) k = k OFS $i
   if (!(k in best)) {order[++n] = k; best[k] = $NF} else if ($NF + 0 < best[k] + 0) best[k] = $NF}
  END {for (i = 1; i <= n; ++i) print order[i], best[order[i]]}'
