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
awk ${sep:+-F "$sep"} -v sep="$sep" '
  {t = $NF; k = $0; sub((sep == "" ? "[ \t]+" : sep) "[^" (sep == "" ? " \t" : sep) "]*$", "", k)
   if (!(k in best)) {order[++n] = k; best[k] = t} else if (t + 0 < best[k] + 0) best[k] = t}
  END {for (i = 1; i <= n; ++i) print order[i] (sep == "" ? " " : sep) best[order[i]]}'
