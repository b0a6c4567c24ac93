#!/usr/bin/env bash
# An emulated cluster on one machine (root): K network namespaces, each an
# emulated node with one interface (eth0, 10.77.N.i/24) plugged into a
# bridge that lives in a namespace of its own, every node's link limited by
# `tc tbf` in both directions, to the rate and at no moment much above it
# (a peak rate 5% higher), as a wire. Runs COMMAND with COLL_NETNS_NODES naming the
# nodes, for `collrun --nodes K` and the multi-rank tests to place ranks on.
# Everything it creates is removed when it exits, on failure and on Ctrl-C
# too; the machine's own network is not touched.
#
#   scripts/emulate-cluster.sh [-k K] [-r RATE] [-d DELAY] -- COMMAND [ARGS...]
#     -k K      nodes (default 2)
#     -r RATE   each node's link, tc syntax (default 1gbit; "none": unlimited)
#     -d DELAY  added one-way latency per link, tc netem syntax (default: none;
#               needs the sch_netem kernel module, which the development VM lacks)
#
#   scripts/emulate-cluster.sh -k 2 -r 1gbit -- \
#     build/tools/collrun --nodes 2 --placement cyclic -n 4 build/bench/coll_perf -b 64M -e 64M
#
# Exits 77 (skip) when it cannot create namespaces here (not root, no ip).
set -euo pipefail

nodes=2 rate=1gbit delay=""
while getopts "k:r:d:h" opt; do
  case $opt in
    k) nodes=$OPTARG ;;
    r) rate=$OPTARG ;;
    d) delay=$OPTARG ;;
    h) sed -n '2,19p' "$0"; exit 0 ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ $# -eq 0 ]; then echo "emulate-cluster: no command to run (see -h)" >&2; exit 2; fi
if ! [[ $nodes =~ ^[0-9]+$ ]] || [ "$nodes" -lt 1 ] || [ "$nodes" -gt 200 ]; then
  echo "emulate-cluster: -k $nodes: between 1 and 200 nodes" >&2; exit 2
fi
if [ "$(id -u)" -ne 0 ] || ! command -v ip > /dev/null || ! command -v tc > /dev/null; then
  echo "emulate-cluster: needs root, ip and tc (iproute2) to create network namespaces; skipping" >&2
  exit 77
fi

# Names unique to this run, so that runs side by side do not collide
# (interface names have at most 15 characters).
id=$(( ($$ * 32768 + RANDOM) % 100000 ))
subnet="10.77.$(( id % 250 + 1 ))"
switch="cesw$id"
created=()
child=0
# Ends what still runs inside the namespaces (a namespace with a process in
# it outlives its name), then deletes them: their veths and qdiscs go too.
cleanup() {
  local ns pid
  if [ "$child" -gt 0 ]; then kill -TERM "$child" 2> /dev/null || true; fi
  for ns in "${created[@]+"${created[@]}"}"; do
    for pid in $(ip netns pids "$ns" 2> /dev/null); do kill -KILL "$pid" 2> /dev/null || true; done
    ip netns del "$ns" 2> /dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The token bucket alone let what it gathered while a link idled (its 256 KiB
# burst) out at the veth's own speed, and a small collective beat the link.
# A second bucket of 64 KiB filled at the peak rate holds every moment to
# about the rate (docs/SIMULATION.md, "Calibration").
peak=""
if [[ $rate =~ ^([0-9]+([.][0-9]+)?)([A-Za-z]*)$ ]]; then
  peak="peakrate $(awk -v r="${BASH_REMATCH[1]}" 'BEGIN {printf "%g", r * 1.05}')${BASH_REMATCH[3]} mtu 64kb"
fi

peak_said=0
# shape NS DEV WHERE...: the rate on DEV (WHERE: root, or parent 1: handle 2:),
# with its peak rate where tc takes one; otherwise said, and without.
shape() {
  local ns=$1 dev=$2
  shift 2
  # shellcheck disable=SC2086  # $peak: several words, or none
  if [ -n "$peak" ] && ip netns exec "$ns" tc qdisc add dev "$dev" "$@" tbf rate "$rate" burst 256kb latency 100ms \
    $peak 2> /dev/null; then
    return
  fi
  if [ "$peak_said" = 0 ]; then
    echo "emulate-cluster: -r $rate: no peak rate that tc takes (rates such as 1gbit have one); after an" \
      "idle moment the links may run faster than their rate" >&2
    peak_said=1
  fi
  ip netns exec "$ns" tc qdisc add dev "$dev" "$@" tbf rate "$rate" burst 256kb latency 100ms
}

limit() {  # limit NS DEV: the rate (tbf) and delay (netem) on DEV's egress
  local ns=$1 dev=$2
  if [ -n "$delay" ]; then
    if ! ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: netem delay "$delay"; then
      echo "emulate-cluster: -d $delay needs tc netem (the sch_netem kernel module), which is not available here" >&2
      exit 1
    fi
    if [ "$rate" != none ]; then shape "$ns" "$dev" parent 1: handle 2:; fi
  elif [ "$rate" != none ]; then
    shape "$ns" "$dev" root
  fi
}

if ! err=$(ip netns add "$switch" 2>&1); then
  if ip netns list 2> /dev/null | grep -qw "$switch"; then
    echo "emulate-cluster: namespace $switch already exists (left by another run?): $err" >&2
    exit 1
  fi
  echo "emulate-cluster: cannot create network namespaces here ($err); skipping" >&2
  exit 77
fi
created+=("$switch")
ip netns exec "$switch" ip link add br0 type bridge
ip netns exec "$switch" ip link set br0 up
ip netns exec "$switch" ip link set lo up

list=""
for i in $(seq 0 $((nodes - 1))); do
  ns="cen${id}n$i"
  ip netns add "$ns"
  created+=("$ns")
  # eth0 inside the node, port$i on the bridge.
  ip link add "cep${id}n$i" netns "$switch" type veth peer name eth0 netns "$ns"
  ip netns exec "$switch" ip link set "cep${id}n$i" name "port$i"
  ip netns exec "$switch" ip link set "port$i" master br0 up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip addr add "$subnet.$((i + 1))/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  limit "$ns" eth0                 # what the node sends
  limit "$switch" "port$i"         # what it receives
  list="$list $ns:$subnet.$((i + 1))"
done
export COLL_NETNS_NODES="${list# }"
echo "emulate-cluster: $nodes node(s) on $subnet.0/24, links ${rate}${delay:+, +$delay}: $COLL_NETNS_NODES" >&2

# In the background, so that a signal to this script reaches the trap at
# once (bash runs traps only between commands) and the command is ended too.
"$@" &
child=$!
status=0
wait "$child" || status=$?
child=0
exit $status
