#!/usr/bin/env bash
# Installs coll into a temporary prefix and checks that a user can build and
# run against it: the examples through find_package(coll) and through
# pkg-config, each launched with the installed collrun.
#
#   tests/install/install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR" >&2
  exit 2
fi
BUILD_DIR=$(cd "$1" && pwd)
SOURCE_DIR=$(cd "$2" && pwd)

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
PREFIX=$TMP/prefix

stage() { echo "== install_test: $*"; }
fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

stage "installing $BUILD_DIR into $PREFIX"
cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$TMP/install.log" ||
  { cat "$TMP/install.log" >&2; fail "cmake --install"; }

# The libdir is lib, lib64 or lib/<multiarch>, depending on the platform:
# take it from where coll.pc went.
pc=$(find "$PREFIX" -name coll.pc -path '*/pkgconfig/*' | head -n 1)
[[ -n "$pc" ]] || fail "no coll.pc under $PREFIX"
PC_DIR=$(dirname "$pc")
LIB_DIR=$(dirname "$PC_DIR")
COLLRUN=$PREFIX/bin/collrun
for f in "$PREFIX/include/coll/coll.h" "$PREFIX/include/coll/coll.hpp" "$LIB_DIR/libcoll.so" \
         "$LIB_DIR/libcoll.a" "$LIB_DIR/cmake/coll/collConfig.cmake" "$COLLRUN"; do
  [[ -e "$f" ]] || fail "not installed: $f"
done
echo "libdir: $LIB_DIR"

stage "building examples with find_package(coll)"
cmake -S "$SOURCE_DIR/examples" -B "$TMP/examples-build" -DCMAKE_PREFIX_PATH="$PREFIX" \
  >"$TMP/configure.log" 2>&1 || { cat "$TMP/configure.log" >&2; fail "configuring examples"; }
cmake --build "$TMP/examples-build" >"$TMP/build.log" 2>&1 ||
  { cat "$TMP/build.log" >&2; fail "building examples"; }

stage "building allreduce.c with pkg-config"
(cd "$TMP" && PKG_CONFIG_PATH=$PC_DIR make -f "$SOURCE_DIR/examples/Makefile.pkgconfig" \
  OUT="$TMP/allreduce_pc") || fail "make -f Makefile.pkgconfig"

expected="rank 0 of 2: sum = 3 3 3 3"
for bin in "$TMP/examples-build/allreduce" "$TMP/examples-build/allreduce_cpp" "$TMP/allreduce_pc"; do
  stage "running collrun -n 2 $(basename "$bin")"
  status=0
  out=$(LD_LIBRARY_PATH=$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} timeout 120 "$COLLRUN" -n 2 "$bin" 2>&1) ||
    status=$?
  echo "$out"
  [[ $status -eq 0 ]] || fail "$(basename "$bin") exited with status $status"
  grep -qxF "$expected" <<<"$out" || fail "$(basename "$bin"): expected line '$expected'"
done

stage "running collrun --grace 60 -n 4 shrink (one rank is killed; the others shrink and go on)"
status=0
out=$(LD_LIBRARY_PATH=$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} COLL_TIMEOUT_MS=20000 timeout 120 \
  "$COLLRUN" --grace 60 -n 4 "$TMP/examples-build/shrink" 2>&1) || status=$?
echo "$out"
[[ $status -eq 137 ]] || fail "shrink: collrun exited with $status, not 137 (rank 2 killed by SIGKILL)"
grep -qxF "going on with 3 ranks from step 5" <<<"$out" || fail "shrink: the survivors did not shrink"
grep -qxF "rank 0 of 3: w = -0.24 -0.48 -0.72 -0.96" <<<"$out" || fail "shrink: wrong final model"

stage "running collrun --spares 2 --grace 600 -n 8 elastic_train (two ranks killed, two spares take their places)"
status=0
out=$(LD_LIBRARY_PATH=$LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} COLL_TIMEOUT_MS=20000 timeout 120 \
  "$COLLRUN" --spares 2 --grace 600 -n 8 "$TMP/examples-build/elastic_train" 2>&1) || status=$?
echo "$out"
[[ $status -eq 137 ]] || fail "elastic_train: collrun exited with $status, not 137 (ranks killed by SIGKILL)"
grep -q "^step 23 failed; lost 3 step(s) since the checkpoint at step 20" <<<"$out" || fail "elastic_train: first recovery"
grep -q "^step 41 failed; lost 1 step(s) since the checkpoint at step 40" <<<"$out" || fail "elastic_train: second recovery"
grep -qxF "8 ranks after 60 steps: the model equals a run without failures, bit for bit" <<<"$out" ||
  fail "elastic_train: the model is not that of a run without failures"

stage "PASS"
