#!/usr/bin/env bash
# Inside each of two Soft-RoCE guests (tests/rxe/two_nodes_test.sh boots
# them, joined by QEMU's socket network): two nodes of two ranks each,
# launched as torchrun launches (RANK, WORLD_SIZE, LOCAL_RANK,
# MASTER_ADDR, MASTER_PORT), so ranks of one node talk over shm and ranks
# of the two nodes over ib. Node 0 reports; node 1 only serves.
#
#   in_guest_two_nodes.sh BUILD_DIR
set -uo pipefail
build=$1
node=$RXE_NODE
master=10.10.0.1
# The default QP timeout (20) for the exactness steps: between two emulated
# guests on a busy host an ACK can outlast 8 x 67 ms (COLL_IB_TIMEOUT=14).
export COLL_TIMEOUT_MS=60000 COLL_JOB_SECRET=0123456789abcdef0123456789abcdef
failed=()
port=29500

# Runs `cmd` as ranks 2*node and 2*node+1 of a 4-rank job; one job per call,
# each on its own port. Prints rank 0's output; returns the worst status.
job() {
  local out=$1
  shift
  port=$((port + 1))
  local pids=() rc=0
  for lr in 0 1; do
    RANK=$((2 * node + lr)) WORLD_SIZE=4 LOCAL_RANK=$lr LOCAL_WORLD_SIZE=2 MASTER_ADDR=$master MASTER_PORT=$port \
      "$@" > "$out.$lr" 2>&1 &
    pids+=($!)
    echo $! > "$out.pid$lr"
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  return $rc
}

# Both nodes step through the same list; a barrier before each step (a
# file each node writes into the shared work folder) keeps them in step.
sync_point() {
  local name=$1 dir=$RXE_SYNC
  touch "$dir/$name.$node"
  for _ in $(seq 600); do [ -e "$dir/$name.$((1 - node))" ] && return 0; sleep 0.1; done
  echo "two_nodes: node $((1 - node)) never reached $name"
  return 1
}

check() {  # check NAME COLLECTIVE DTYPE OP: exact results on 4 ranks over 2 nodes
  local name=$1 out=/tmp/$1 t0=$SECONDS
  sync_point "$name" || { failed+=("$name"); return; }
  job "$out" "$build/bench/coll_perf" -C "$2" -d "$3" -o "$4" -b 8 -e 1M -f 8 -n 2 -w 1 -c 1
  local rc=$?
  # The #wrong columns (out of place, in place) must be 0 on every row.
  if [ "$rc" -eq 0 ] && awk '$1 ~ /^[0-9]+$/ && NF >= 13 && ($9 != 0 || $13 != 0) {bad = 1} END {exit bad}' "$out.0"; then
    [ "$node" -eq 0 ] && { cat "$out.0"; echo "=== $name: exact, $((SECONDS - t0)) s"; }
  else
    echo "=== $name: FAILED (status $rc)"
    cat "$out.0" "$out.1"
    failed+=("$name")
  fi
}

steps=${RXE_STEPS:-all}
want() { [ "$steps" = all ] || [[ " $steps " == *" $1 "* ]]; }
want allreduce_f32_sum && check allreduce_f32_sum allreduce float32 sum
want allreduce_i64_max && check allreduce_i64_max allreduce int64 max
want allreduce_bf16_avg && check allreduce_bf16_avg allreduce bfloat16 avg
want broadcast && check broadcast broadcast uint8 sum
want allgather && check allgather allgather int32 sum
want reduce_scatter && check reduce_scatter reduce_scatter float64 prod
want alltoall && check alltoall alltoall int8 sum
want sendrecv && check sendrecv sendrecv float32 sum

# A rank of node 1 is killed (kill -9) in the middle of a stream of
# allreduces: every rank of node 0 fails, naming a cause, within the timeout.
dies() {  # dies NAME HOW: HOW kills on node 1 after 4 s ("rank" or "node")
  local name=$1 how=$2 out=/tmp/$1
  sync_point "$name" || { failed+=("$name"); return; }
  local t0=$SECONDS
  COLL_IB_TIMEOUT=17 COLL_TIMEOUT_MS=20000 job "$out" "$build/bench/coll_perf" -b 64K -e 64K -n 100000 -w 0 -c 0 &
  local jobpid=$!
  # Node 1 strikes 3 s after node 0's rank 0 has printed its header (every
  # communicator is up: init's own waits are another story).
  if [ "$node" -eq 0 ]; then
    for _ in $(seq 600); do grep -q "^# coll_perf:" "$out.0" 2>/dev/null && break; sleep 0.1; done
    touch "$RXE_SYNC/$name.started"
  else
    for _ in $(seq 600); do [ -e "$RXE_SYNC/$name.started" ] && break; sleep 0.1; done
    sleep 3
    if [ "$how" = node ]; then echo "=== $name: node 1 powers off now"; echo o > /proc/sysrq-trigger; sleep 60; fi
    kill -9 "$(cat "$out.pid1")"
  fi
  # A rank still running long after the timeout is a hang: show where.
  while kill -0 "$jobpid" 2>/dev/null && [ $((SECONDS - t0)) -lt 60 ]; do sleep 1; done
  if kill -0 "$jobpid" 2>/dev/null; then
    for lr in 0 1; do
      echo "=== $name: rank $((2 * node + lr)) still runs after 60 s:"
      gdb -p "$(cat "$out.pid$lr")" -batch -ex "thread apply all bt 15" 2>/dev/null | grep "^#\|^Thread"
      kill -9 "$(cat "$out.pid$lr")" 2>/dev/null
    done
  fi
  wait "$jobpid"
  local rc=$? took=$((SECONDS - t0))
  [ "$node" -eq 0 ] || return 0
  local ok=1
  [ "$rc" -ne 0 ] || ok=0
  for lr in 0 1; do grep -qE "COLL_REMOTE_ERROR|COLL_TIMEOUT" "$out.$lr" || ok=0; done
  [ "$took" -le 60 ] || ok=0
  echo "=== $name: node 0's ranks ended after $took s (status $rc):"
  cat "$out.0" "$out.1" | grep -v "^#\|^ *[0-9]"
  [ "$ok" -eq 1 ] || failed+=("$name")
}

want rank_killed && dies rank_killed rank
want node_powered_off && dies node_powered_off node

if [ ${#failed[@]} -gt 0 ]; then
  echo "two_nodes (node $node): FAILED: ${failed[*]}"
  exit 1
fi
echo "two_nodes (node $node): all passed"
