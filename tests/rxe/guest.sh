#!/usr/bin/env bash
# Boots one or two QEMU guests (TCG) of Debian's kernel with Soft-RoCE and
# runs a command in each, as root, in the host's own file system (read-only
# over 9p; the folders of --rw, by default the current git tree, read-write
# at the same paths), so the host's build runs unchanged inside.
#
#   tests/rxe/guest.sh [--nodes 1|2] [--timeout SEC] [--mem MIB] [--smp N]
#                      [--rw DIR]... [--may-die NODE] -- CMD0 [CMD1]
#
# Node i has eth0 at 10.10.0.(i+1)/24 and rxe0 on it; two nodes are joined
# by QEMU socket networking (two RoCE v2 nodes). The command runs with bash
# in the caller's directory with RXE_NODE (0, 1), RXE_NODES,
# RXE_ADDR (its eth0 address) and RXE_PEER_ADDR (the other
# node's) set. A command may take its node down for real: `ip link set eth0
# down`, or `echo o > /proc/sysrq-trigger` (power off); a node named in
# --may-die may end without a status. Console logs: $RXE_LOGS (a temp
# folder, removed unless kept with RXE_KEEP=1), printed on failure.
#
# Exit status: the highest of the commands' own; 124 for a guest that ran
# past --timeout (killed); 77 where guests cannot run here.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

nodes=1 timeout=600 mem=1536 smp=2 may_die=-1
rw=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --smp) smp=$2; shift 2 ;;
    --rw) rw+=("$(cd "$2" && pwd)"); shift 2 ;;
    --may-die) may_die=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: guest.sh [--nodes 1|2] [--timeout SEC] [--mem MIB] [--smp N] [--rw DIR]... [--may-die NODE] -- CMD..." >&2; exit 2 ;;
  esac
done
[ $# -eq "$nodes" ] || { echo "guest.sh: $nodes node(s) need $nodes command(s), got $#" >&2; exit 2; }
[ ${#rw[@]} -gt 0 ] || rw=("$(git rev-parse --show-toplevel 2>/dev/null || pwd)")
# The tree this script is in, too (the guest's tmpfs /tmp would hide a
# clone under the host's /tmp), mounted before any folder inside it.
tree=$(cd "$here/../.." && pwd)
[[ " ${rw[*]} " == *" $tree "* ]] || rw=("$tree" "${rw[@]}")
mapfile -t rw < <(printf '%s\n' "${rw[@]}" | awk '{ print length($0) "\t" $0 }' | sort -n | cut -f2-)

cache=$("$here/prepare.sh")
# Under the cache: the guests see the host's files, but their /tmp is their own.
logs=$(mktemp -d "$cache/run.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  [ "${RXE_KEEP:-0}" = 1 ] || rm -rf "$logs"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)

# Each node's command as a script the guest reads over 9p.
cmds=("$@")
for ((n = 0; n < nodes; n++)); do
  peer=$(( nodes == 2 ? 2 - n : 1 ))
  {
    echo "export RXE_NODE=$n RXE_NODES=$nodes RXE_ADDR=10.10.0.$((n + 1)) RXE_PEER_ADDR=10.10.0.$peer"
    echo "export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8"
    printf 'cd %q\n' "$PWD"
    echo "${cmds[$n]}"
  } > "$logs/node$n.sh"
done

start=$(date +%s)
for ((n = 0; n < nodes; n++)); do
  if [ "$nodes" -eq 1 ]; then net="socket,id=n0,listen=127.0.0.1:$port"
  elif [ "$n" -eq 0 ]; then net="socket,id=n0,listen=127.0.0.1:$port"
  else net="socket,id=n0,connect=127.0.0.1:$port"; fi
  virtfs=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
  i=0
  for d in "${rw[@]}"; do
    virtfs+=(-virtfs "local,path=$d,mount_tag=rw$i,security_model=none,multidevs=remap")
    i=$((i + 1))
  done
  rwlist=$(IFS=,; echo "${rw[*]}")
  qemu-system-x86_64 -accel tcg,thread=multi -smp "$smp" -m "$mem" -nographic -no-reboot -nodefaults \
    -serial "file:$logs/node$n.log" -kernel "$cache/vmlinuz" -initrd "$cache/initrd.cpio.gz" \
    -append "console=ttyS0 quiet panic=-1 coll.node=$n coll.addr=10.10.0.$((n + 1)) coll.script=$logs/node$n.sh coll.rw=$rwlist" \
    "${virtfs[@]}" -netdev "$net" -device "virtio-net-pci,netdev=n0,mac=52:54:00:12:34:5$n,romfile=" \
    > "$logs/qemu$n.log" 2>&1 &
  pids+=($!)
  [ "$n" -eq 0 ] && [ "$nodes" -eq 2 ] && sleep 1  # the listener first
done

timed_out=0
for p in "${pids[@]}"; do
  while kill -0 "$p" 2>/dev/null; do
    if [ $(( $(date +%s) - start )) -ge "$timeout" ]; then timed_out=1; kill -9 "${pids[@]}" 2>/dev/null || true; break 2; fi
    sleep 1
  done
done

rc=0
for ((n = 0; n < nodes; n++)); do
  status=$(sed -n 's/.*coll-rxe: status \([0-9]*\).*/\1/p' "$logs/node$n.log" | tail -1)
  if [ -z "$status" ]; then
    if [ "$n" -eq "$may_die" ] && [ "$timed_out" -eq 0 ]; then
      echo "guest.sh: node $n went down (as its command may)"
      continue
    fi
    status=$([ "$timed_out" -eq 1 ] && echo 124 || echo 125)
  fi
  if [ "$status" -ne 0 ]; then
    echo "guest.sh: node $n: status $status$([ "$timed_out" -eq 1 ] && echo " (killed after ${timeout} s)"); its console:" >&2
    tail -n 60 "$logs/node$n.log" >&2
    cat "$logs/qemu$n.log" >&2
  fi
  [ "$status" -gt "$rc" ] && rc=$status
done
for ((n = 0; n < nodes; n++)); do
  sed -e '/coll-rxe: status/d' -e "s/^/[node$n] /" "$logs/node$n.log" | grep -v '^\[node.\] \[ *[0-9.]*\]' || true
done
echo "guest.sh: $nodes node(s), $(( $(date +%s) - start )) s, status $rc"
exit "$rc"
