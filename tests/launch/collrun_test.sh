#!/usr/bin/env bash
# collrun: variables, exit codes, --tag-output, --bind-to, and ending the other ranks
# when one fails, so nothing is left running.
set -euo pipefail
collrun=$1
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

echo "== every rank gets its variables"
out=$("$collrun" -n 3 --tag-output -- sh -c 'echo "r=$COLL_RANK n=$COLL_NRANKS l=$COLL_LOCAL_RANK/$COLL_LOCAL_SIZE root=${COLL_ROOT_ADDR%%:*} secret=${#COLL_JOB_SECRET}"')
for r in 0 1 2; do
  grep -qxF "[$r] r=$r n=3 l=$r/3 root=127.0.0.1 secret=32" <<<"$out" || fail "rank $r line missing in: $out"
done

echo "== and torchrun's, so that torch's env:// runs under collrun"
out=$("$collrun" -n 2 --tag-output -- sh -c 'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $MASTER_ADDR ${MASTER_PORT:-none}"')
port=$(sed -n 's/^\[0\] 0 2 0 2 127.0.0.1 \([0-9][0-9]*\)$/\1/p' <<<"$out")
[ -n "$port" ] || fail "rank 0's torchrun variables are wrong: $out"
grep -qxF "[1] 1 2 1 2 127.0.0.1 $port" <<<"$out" || fail "rank 1's torchrun variables are wrong: $out"

echo "== the store's port is held for rank 0 from the start, so no other process can take it"
out=$("$collrun" -n 2 --tag-output -- sh -c '[ "$COLL_RANK" = 0 ] || exit 0
  [ -n "${COLL_ROOT_LISTEN_FD:-}" ] && [ -e "/proc/$$/fd/$COLL_ROOT_LISTEN_FD" ] || { echo "no inherited listener"; exit 1; }
  /usr/bin/python3 -c "import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try: s.bind((\"127.0.0.1\", int(sys.argv[1]))); print(\"port was free\")
except OSError as e: print(\"held:\", e.errno)" "${COLL_ROOT_ADDR##*:}"')
grep -qxF "[0] held: 98" <<<"$out" || fail "rank 0's port could be taken by another process: $out"

echo "== the first non-zero exit status is returned"
set +e
"$collrun" -n 3 --grace 1 -- sh -c 'exit $(( COLL_RANK == 1 ? 7 : 0 ))'
rc=$?
set -e
[ "$rc" -eq 7 ] || fail "expected status 7, got $rc"

echo "== a rank killed by a signal is 128+signal"
set +e
"$collrun" -n 2 --grace 1 -- sh -c 'if [ "$COLL_RANK" = 0 ]; then kill -9 $$; fi; exit 0'
rc=$?
set -e
[ "$rc" -eq 137 ] || fail "expected status 137, got $rc"

echo "== the others are ended after the grace period"
# GNU sleep adds its arguments: the marker is the sleeper's own command line, and its shell's.
marker="sleep 300 0.$$" pattern="sleep 300 0\\.$$"'(;|$)'
start=$(date +%s)
set +e
"$collrun" -n 3 --grace 1 -- sh -c "if [ \"\$COLL_RANK\" = 2 ]; then exit 3; fi; $marker; :"
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
[ "$rc" -eq 3 ] || fail "expected status 3, got $rc"
[ "$elapsed" -lt 20 ] || fail "took ${elapsed}s to end the sleeping ranks"
sleep 0.5
if pgrep -f "$pattern" >/dev/null; then fail "ranks left running: $(pgrep -af "$pattern")"; fi

echo "== a rank that cannot be started: those started are ended at once, not left waiting for it"
# Under a limit of 16 open files, --tag-output's pipe for one of the 32 ranks fails (each keeps one).
marker="sleep 301 0.$$" pattern="sleep 301 0\\.$$"'(;|$)'
start=$(date +%s)
set +e
err=$( (ulimit -n 16 && "$collrun" -n 32 --tag-output -- sh -c "$marker; :") 2>&1)
rc=$?
set -e
elapsed=$(( $(date +%s) - start ))
[ "$rc" -eq 1 ] || fail "expected status 1, got $rc: $err"
grep -q "^collrun: cannot start rank [0-9]* (pipe: .*); ending the [0-9]* started before it$" <<<"$err" ||
  fail "no note of the rank that could not start: $err"
[ "$elapsed" -lt 20 ] || fail "took ${elapsed}s to end the started ranks"
sleep 0.5
if pgrep -f "$pattern" >/dev/null; then fail "ranks left running: $(pgrep -af "$pattern")"; fi

echo "== what the ranks left in /dev/shm is removed, nothing else"
# A rank ended by a signal before its peers mapped its segment leaves it: coll-<tag>-r<rank>-p<pid>-n<ns>,
# the pid its maker's and ns the inode of its pid namespace, whatever communicator made it. Here each rank
# makes one so named; one whose pid is its own with a 0 after it, which is not one of the job's; and one
# of its pid in another namespace (a container's that shares /dev/shm). Rank 0 also makes one with the
# job's tag (the first 12 hex digits of SHA-256 of "coll-shm:" and the secret), as a child of a wrapper
# would.
tag="collruntest$$"
tmp=$(mktemp -d)
# What the tests from here on leave, however they end: the segments below, the sleepers further down.
cleanup() {
  rm -rf "$tmp"
  rm -f /dev/shm/coll-"$tag"-* /dev/shm/coll-"${job:-none}"-*
  [ -z "${runner:-}" ] || kill -KILL "$runner" 2>/dev/null || true
  [ -z "${sleepers:-}" ] || pkill -KILL -fx "$sleepers" || true
}
trap cleanup EXIT
err=$("$collrun" -n 2 -- /usr/bin/python3 -c '
import hashlib, os, sys
tag, rank, pid = sys.argv[1], os.environ["COLL_RANK"], os.getpid()
ns = os.stat("/proc/self/ns/pid").st_ino
job = hashlib.sha256(("coll-shm:" + os.environ["COLL_JOB_SECRET"]).encode()).hexdigest()[:12]
names = [(tag, pid, ns), (tag, "%d0" % pid, ns), (tag, pid, ns + 1)] + ([(job, "%d0" % pid, ns)] if rank == "0" else [])
for t, p, n in names:
    open("/dev/shm/coll-%s-r%s-p%s-n%s" % (t, rank, p, n), "w").close()
open("%s/pid%s" % (sys.argv[2], rank), "w").write("%d %s %d\n" % (pid, job, ns))' "$tag" "$tmp" 2>&1) ||
  fail "the job failed: $err"
for r in 0 1; do
  read -r pid job ns < "$tmp/pid$r"
  [ ! -e "/dev/shm/coll-$tag-r$r-p$pid-n$ns" ] || fail "rank $r's coll-$tag-r$r-p$pid-n$ns left in /dev/shm"
  [ -e "/dev/shm/coll-$tag-r$r-p${pid}0-n$ns" ] || fail "collrun removed coll-$tag-r$r-p${pid}0-n$ns, not a rank's"
  [ -e "/dev/shm/coll-$tag-r$r-p$pid-n$((ns + 1))" ] ||
    fail "collrun removed coll-$tag-r$r-p$pid-n$((ns + 1)), another pid namespace's"
done
read -r pid job ns < "$tmp/pid0"
[ ! -e "/dev/shm/coll-$job-r0-p${pid}0-n$ns" ] || fail "the job's coll-$job-r0-p${pid}0-n$ns left in /dev/shm"
grep -q "^collrun: removed 3 shared-memory segment(s) that ended ranks left in /dev/shm (coll-" <<<"$err" ||
  fail "no note of the 3 segments removed: $err"

echo "== --bind-to core: rank r on the (r mod C)-th of the C CPUs allowed"
read -ra allowed <<<"$(/usr/bin/python3 -c "$cpus_of")"
if [ "${#allowed[@]}" -lt 2 ]; then
  echo "(one CPU: binding cannot be told from none; skipped)"
else
  # Two CPUs, the first and last allowed (a gap between them where there are more): three ranks wrap around.
  first=${allowed[0]} last=${allowed[${#allowed[@]} - 1]}
  out=$(taskset -c "$first,$last" "$collrun" -n 3 --bind-to core --tag-output -- /usr/bin/python3 -c "$cpus_of")
  for want in "[0] $first" "[1] $last" "[2] $first"; do
    grep -qxF "$want" <<<"$out" || fail "under taskset -c $first,$last, expected '$want' in: $out"
  done
  out=$(taskset -c "$first,$last" "$collrun" -n 2 --tag-output -- /usr/bin/python3 -c "$cpus_of")
  grep -qxF "[1] $first $last" <<<"$out" || fail "without --bind-to, rank 1 should keep both CPUs: $out"
fi

echo "== usage errors"
set +e
"$collrun" -n 0 true 2>/dev/null; rc=$?
set -e
[ "$rc" -eq 2 ] || fail "-n 0 should be a usage error (2), got $rc"
set +e
err=$("$collrun" -n 2 --bind-to socket true 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && grep -qF -- "--bind-to socket: core or none" <<<"$err" || fail "--bind-to socket: $rc $err"
for bad in "-n 2x" "-n 1e3" "--spares -1" "--nodes 1.5" "--nodes 0x10" "--grace soon"; do
  set +e
  # shellcheck disable=SC2086  # the option and its value, two words
  err=$("$collrun" $bad -n 2 true 2>&1); rc=$?
  set -e
  [ "$rc" -eq 2 ] && grep -qF -- "collrun: $bad: must be a" <<<"$err" || fail "$bad: $rc $err"
done

echo "== --tag-output when collrun starts without stdin, stdout and stderr: the rank still has its stderr"
# Its pipe's write end can then be descriptor 2 itself, which the rank must not lose.
set +e
"$collrun" -n 1 --tag-output -- sh -c 'echo to-stderr >&2' <&- >&- 2>&-
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "without stdout and stderr: the rank could not write to its stderr (status $rc)"

# Ctrl-C to collrun ($runner), then waits for it: its status in rc, how long it took to end in ms.
interrupt_runner() {
  local start
  start=$(date +%s%N)
  kill -INT "$runner"
  set +e
  wait "$runner"
  rc=$?
  set -e
  ms=$((($(date +%s%N) - start) / 1000000))
}

echo "== interrupted, collrun ends its ranks: SIGTERM at once, SIGKILL 2 s later"
# Ranks that ignore SIGTERM: only the SIGKILL ends them, which must wait its 2 s.
# The sleepers themselves (pgrep -x: not collrun, not their shells): each exists once its shell ignores SIGTERM.
marker="sleep 302 0.$$" sleepers="sleep 302 0\\.$$"
"$collrun" -n 2 -- sh -c "trap '' TERM; $marker; :" &
runner=$!
for _ in $(seq 100); do [ "$(pgrep -fxc "$sleepers")" -ge 2 ] && break; sleep 0.1; done
[ "$(pgrep -fxc "$sleepers")" -ge 2 ] || fail "the ranks did not start: $(pgrep -af "sleep 302")"
interrupt_runner
[ "$rc" -eq 130 ] || fail "interrupted: expected status 130, got $rc"
[ "$ms" -ge 1500 ] && [ "$ms" -lt 15000 ] || fail "interrupted: the ranks ended ${ms} ms after the signal, not about 2000"
if pgrep -fx "$sleepers" >/dev/null; then fail "interrupted: ranks left running: $(pgrep -afx "$sleepers")"; fi

echo "== interrupted after a failure's SIGTERM: the SIGKILL at once, not 2 s later"
marker="sleep 303 0.$$" sleepers="sleep 303 0\\.$$"
# Rank 0 fails once rank 1 ignores SIGTERM, which its sleeper inherits.
"$collrun" -n 2 --grace 0 -- sh -c "if [ \$COLL_RANK = 0 ]; then
    while [ ! -e '$tmp/ignoring' ]; do sleep 0.05; done; exit 3
  fi; trap '' TERM; touch '$tmp/ignoring'; $marker; :" 2> "$tmp/failed" &
runner=$!
for _ in $(seq 100); do grep -q "ending the 1 remaining rank" "$tmp/failed" && pgrep -fx "$sleepers" >/dev/null && break; sleep 0.1; done
grep -q "ending the 1 remaining rank(s) after rank 0 failed" "$tmp/failed" || fail "no SIGTERM after the failure: $(cat "$tmp/failed")"
pgrep -fx "$sleepers" >/dev/null || fail "the rank that ignores SIGTERM is not running: $(cat "$tmp/failed")"
interrupt_runner
[ "$rc" -eq 130 ] || fail "interrupted after a failure: expected status 130, got $rc"
[ "$ms" -lt 1500 ] || fail "interrupted after a failure's SIGTERM: the rank ended ${ms} ms after the signal, not at once"
grep -q "collrun: interrupted (Interrupt): killing the 1 remaining rank(s)" "$tmp/failed" || fail "$(cat "$tmp/failed")"
if pgrep -fx "$sleepers" >/dev/null; then fail "interrupted after a failure: left running: $(pgrep -afx "$sleepers")"; fi
echo "collrun_test: all passed"
