#!/usr/bin/env bash
# A /dev/shm too small for the segments is an error that says so and how
# large it must be — not a crash or a hang. Needs root and unshare (a
# private mount namespace with a 16 KiB /dev/shm); skipped (77) otherwise.
set -euo pipefail
build=$1
if [ "$(id -u)" -ne 0 ] || ! command -v unshare >/dev/null; then echo "SKIP: needs root and unshare"; exit 77; fi
if ! unshare -m true 2>/dev/null; then echo "SKIP: unshare -m is not permitted here"; exit 77; fi
set +e
out=$(unshare -m sh -c "mount -t tmpfs -o size=16k tmpfs /dev/shm && \
  timeout 60 '$build/tools/collrun' -n 3 --grace 1 '$build/bench/coll_perf' -b 8 -e 8 -n 1 -w 0" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || { echo "shm_small_test: FAIL: ran with a 16 KiB /dev/shm: $out"; exit 1; }
grep -q "/dev/shm has .* bytes free but segment .* needs [0-9]* " <<<"$out" ||
  { echo "shm_small_test: FAIL: the error does not say how much is needed: $out"; exit 1; }
grep -m1 "/dev/shm has" <<<"$out" || true  # a here-string: with pipefail, echo | grep -m1 can die of SIGPIPE
# And COLL_TRANSPORTS=tcp is the way around it.
set +e
out=$(unshare -m sh -c "mount -t tmpfs -o size=16k tmpfs /dev/shm && \
  COLL_TRANSPORTS=tcp timeout 60 '$build/tools/collrun' -n 3 '$build/bench/coll_perf' -b 8 -e 8 -n 1 -w 0" 2>&1)
rc=$?
set -e
grep -q "^# Out of bounds values : 0 OK$" <<<"$out" || { echo "shm_small_test: FAIL: tcp fallback (exit $rc): $out"; exit 1; }
echo "shm_small_test: all passed"
