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

# node1_switch: the emulated switch (cesw<id>) whose port1 is node 1's cable, read from
# COLL_NETNS_NODES ("cen<id>n0:... cen<id>n1:...", scripts/emulate-cluster.sh).
node1_switch() {
  local node1=${COLL_NETNS_NODES#* }
  node1=${node1%%:*}
  local switch=cesw${node1#cen}
  echo "${switch%n1}"
}

# await_loop OUT JOB LABEL: waits until coll_perf's job JOB, writing to OUT, is in its loop (rank 0
# has printed the table's header), not still connecting. A job that never got there, or that failed
# on its own, would pass for one that found the fault a test injects next: then LABEL's complaint,
# OUT, and exit 1.
await_loop() {
  local out=$1 job=$2 label=$3
  for _ in $(seq 300); do grep -q "# coll_perf:" "$out" && break; sleep 0.1; done
  sleep 0.5
  grep -q "# coll_perf:" "$out" && kill -0 "$job" 2>/dev/null && ! grep -q "failed" "$out" ||
    { echo "$label: the job was not running"; cat "$out"; exit 1; }
}

# algorithms_run FILE COLLECTIVE: the algorithms the ranks ran COLLECTIVE with, one a line, sorted,
# read from FILE, their stderr under COLL_DEBUG=TRACE COLL_DEBUG_SUBSYS=COLL, which logs each
# operation as it runs ("... TRACE/COLL allreduce #3: 1 job(s), ring, 6 steps"). The log is kept out
# of stdout, where a line of it could split a line of rank 0's table.
algorithms_run() {
  sed -nE "s/.* TRACE\/COLL $2 #[0-9]+: [0-9]+ job\(s\), ([^,]+), .*/\1/p" "$1" | sort -u
}

# not_traced FILE: what FILE (stderr under COLL_DEBUG=TRACE) says besides the trace: the errors and
# warnings of collrun, the ranks and coll, without the schedules that each traced operation prints.
not_traced() {
  grep -E "^(collrun|emulate-cluster):|coll_perf:| coll (WARN|INFO)/" "$1" || true
}
