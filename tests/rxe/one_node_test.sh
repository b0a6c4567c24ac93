#!/usr/bin/env bash
# ctest rxe.one_node: one Soft-RoCE guest (guest.sh), every rank in it: the
# ib transport's conformance suite, an allreduce matrix slice, the kill -9
# trials, the GID choice on real tables and the provoked failures
# (in_guest_one_node.sh). Skipped (77) where QEMU cannot run.
#
#   one_node_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd)
here="$src/tests/rxe"
"$here/prepare.sh" > /dev/null || exit $?
exec "$here/guest.sh" --timeout 480 --rw "$build" -- "bash $here/in_guest_one_node.sh $build $src"
