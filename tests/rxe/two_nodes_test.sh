#!/usr/bin/env bash
# ctest rxe.two_nodes: two Soft-RoCE guests joined by QEMU's socket network,
# two nodes of two ranks each launched with torchrun's variables: exact
# collectives across the nodes (ib between them, shm inside), a rank
# killed, and node 1 powered off mid-allreduce (in_guest_two_nodes.sh).
# Skipped (77) where QEMU cannot run.
#
#   two_nodes_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
here="$src/tests/rxe"
"$here/prepare.sh" > /dev/null || exit $?
sync=$(mktemp -d "$build/rxe-sync.XXXXXX")
trap 'rm -rf "$sync"' EXIT
cmd="RXE_SYNC=$sync bash $here/in_guest_two_nodes.sh $build"
"$here/guest.sh" --nodes 2 --timeout 480 --may-die 1 --rw "$build" -- "$cmd" "$cmd"
