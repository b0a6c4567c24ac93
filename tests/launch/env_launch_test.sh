#!/usr/bin/env bash
# coll_perf started by other launchers' variables, without collrun:
# torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (with and without
# COLL_JOB_SECRET), and Slurm's SLURM_PROCID, SLURM_NTASKS with an explicit
# COLL_ROOT_ADDR (what a build without MPI needs under srun).
set -euo pipefail
build=$1
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# MASTER_PORT as a user picks it: a port free now. It is drawn below the
# kernel's ephemeral range (32768 and up here), where port-0 binds and
# outgoing connections of the tests running alongside never land.
free_port() {
  /usr/bin/python3 -c '
import random, socket
while True:
    port = random.randrange(20000, 32000)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port)); print(port); break
    except OSError:
        pass'
}

run_job() {  # launcher (torchrun|slurm), world_size, extra env...
  local launcher=$1 world=$2; shift 2
  local port; port=$(free_port)
  local pids=()
  for ((r = 0; r < world; r++)); do
    local vars=("RANK=$r" "LOCAL_RANK=$r" "WORLD_SIZE=$world" "LOCAL_WORLD_SIZE=$world" MASTER_ADDR=127.0.0.1 "MASTER_PORT=$port")
    [ "$launcher" = slurm ] && vars=("SLURM_PROCID=$r" "SLURM_NTASKS=$world" "SLURM_LOCALID=$r" "COLL_ROOT_ADDR=127.0.0.1:$port")
    env -u COLL_RANK -u RANK -u OMPI_COMM_WORLD_RANK "${vars[@]}" COLL_SOCKET_IFNAME=lo "$@" \
      timeout 120 "$build/bench/coll_perf" -b 8 -e 256K -f 8 -n 2 -w 1 >"$tmp/out.$r" 2>&1 &
    pids+=($!)
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || fail "a rank failed: $(cat "$tmp"/out.*)"
  grep -q "^# Out of bounds values : 0 OK$" "$tmp/out.0" || fail "rank 0: $(cat "$tmp/out.0")"
  grep -q "allreduce, $world ranks" "$tmp/out.0" || fail "not $world ranks: $(cat "$tmp/out.0")"
}

run_job torchrun 2
echo "== torchrun variables, derived secret: OK"
run_job torchrun 3 COLL_JOB_SECRET=00112233445566778899aabbccddeeff
echo "== torchrun variables with COLL_JOB_SECRET: OK"
run_job slurm 3 COLL_JOB_SECRET=ffeeddccbbaa99887766554433221100
echo "== Slurm variables with COLL_ROOT_ADDR and COLL_JOB_SECRET: OK"
echo "env_launch_test: all passed"
