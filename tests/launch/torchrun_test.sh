#!/usr/bin/env bash
# coll_perf started the way torchrun starts workers: RANK, WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT (and LOCAL_RANK), with and without COLL_JOB_SECRET.
set -euo pipefail
build=$1
fail() { echo "torchrun_test: FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

run_job() {  # world_size, extra env...
  local world=$1; shift
  local port; port=$(free_port)
  local pids=()
  for ((r = 0; r < world; r++)); do
    env -u COLL_RANK RANK=$r LOCAL_RANK=$r WORLD_SIZE=$world LOCAL_WORLD_SIZE=$world MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port COLL_SOCKET_IFNAME=lo "$@" \
      timeout 120 "$build/bench/coll_perf" -b 8 -e 256K -f 8 -n 2 -w 1 >"$tmp/out.$r" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || fail "a rank failed: $(cat "$tmp"/out.*)"
  grep -q "^# Out of bounds values : 0 OK$" "$tmp/out.0" || fail "rank 0: $(cat "$tmp/out.0")"
  grep -q "allreduce, $world ranks" "$tmp/out.0" || fail "not $world ranks: $(cat "$tmp/out.0")"
}

run_job 2
echo "== torchrun variables, derived secret: OK"
run_job 3 COLL_JOB_SECRET=00112233445566778899aabbccddeeff
echo "== torchrun variables with COLL_JOB_SECRET: OK"
echo "torchrun_test: all passed"
