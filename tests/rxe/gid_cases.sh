#!/usr/bin/env bash
# The RoCE GID choice on the guest's real GID table, which the kernel
# changes as addresses come and go on eth0 (rxe0's netdev): each case sets
# the addresses, then asks `colldiag --ib` what coll would choose.
#
#   gid_cases.sh BUILD_DIR      (as root, in a guest: it changes eth0)
set -euo pipefail
diag="$1/tools/colldiag"
ip4=$(ip -4 -o addr show dev eth0 | awk '{print $4; exit}')
fails=0

expect() {  # expect WHAT PATTERN [ENV...]: colldiag --ib's output must match
  local what=$1 pattern=$2
  shift 2
  sleep 0.3  # the kernel updates the table as the address settles
  local out
  out=$(env "$@" "$diag" --ib 2>&1 || true)
  if grep -qE "$pattern" <<< "$out"; then
    echo "gid: $what: ok ($(grep -E "$pattern" <<< "$out" | head -1))"
  else
    echo "gid: $what: FAILED, wanted /$pattern/ in:"
    echo "$out"
    fails=$((fails + 1))
  fi
}

expect "IPv4 by default" "gid index [0-9]+: .*::ffff:${ip4%/*} \(RoCE v2, IPv4, eth0\)"

ip addr del "$ip4" dev eth0
expect "only link-local entries: a clear error with the table" \
  "no usable RoCE GID on rxe0 port 1 for COLL_IB_ADDR_FAMILY=AF_INET"
expect "only link-local entries: the table is listed" "fe80::.*RoCE v2, IPv6 link-local, eth0"

ip addr add "$ip4" dev eth0
ip -6 addr add fd00::15/64 dev eth0 nodad
expect "IPv4 and IPv6 together: IPv4" "gid index [0-9]+: .*::ffff:${ip4%/*} "
expect "IPv4 and IPv6 together: AF_INET6" "gid index [0-9]+: .*fd00::15 \(RoCE v2, IPv6, eth0\)" COLL_IB_ADDR_FAMILY=AF_INET6

ip addr add 10.2.0.5/24 dev eth0
ip addr add 10.3.0.5/24 dev eth0
expect "several subnets: COLL_IB_ADDR_RANGE" "gid index [0-9]+: .*::ffff:10\.3\.0\.5 .*in 10\.3\.0\.0/16" COLL_IB_ADDR_RANGE=10.3.0.0/16
expect "a range no entry is in: the error names it" "no usable RoCE GID on .*COLL_IB_ADDR_RANGE=192\.168\.0\.0/16" COLL_IB_ADDR_RANGE=192.168.0.0/16

index=$(grep -n . /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null | grep -i "0a02:0005" | sed 's|.*/gids/\([0-9]*\):.*|\1|' | head -1)
expect "the override COLL_IB_GID_INDEX=$index" "gid index $index: .*COLL_IB_GID_INDEX" COLL_IB_GID_INDEX="$index"
expect "an override on an empty entry: an error" "COLL_IB_GID_INDEX=100 on .*(no such entry|unused)" COLL_IB_GID_INDEX=100

ip addr del 10.2.0.5/24 dev eth0
ip addr del 10.3.0.5/24 dev eth0
ip -6 addr del fd00::15/64 dev eth0
[ "$fails" -eq 0 ] || { echo "gid: $fails case(s) failed"; exit 1; }
echo "gid: all cases passed"
