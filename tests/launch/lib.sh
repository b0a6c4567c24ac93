# shellcheck shell=bash
# Sourced by the launch tests: what several of them check alike.

# fail MESSAGE...: the test's name, FAIL, the message; exit 1.
fail() {
  echo "$(basename "$0" .sh): FAIL: $*" >&2
  exit 1
}

# check_ok OUTPUT DESCRIPTION: a perf tool's run (coll_perf, gloo_perf) found every value right and
# finished (its footer).
check_ok() {
  grep -q "^# Out of bounds values : 0 OK$" <<<"$1" || fail "$2: $1"
  grep -q "^# Avg bus bandwidth" <<<"$1" || fail "$2: no footer"
}

# A Python line printing the CPUs its process may run on, in order ("0 1"); run it under a launcher to
# see each rank's binding.
# shellcheck disable=SC2034  # used by the tests that source this
cpus_of='import os; print(*sorted(os.sched_getaffinity(0)))'
