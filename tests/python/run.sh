#!/usr/bin/env bash
# ctest python.package: the Python package's tests (pytest) against this
# build's libcoll, in the environment scripts/python-env.sh makes.
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
py=$("$root/scripts/python-env.sh" "$build")
# Installed as a user would (pip install ./python, no index), afresh each run.
"$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall "$root/python"
export COLL_LIBRARY="$build/src/libcoll.so.0" COLL_BUILD_DIR="$build"
cd "$build"  # not the source tree: the installed package is the one imported
exec "$py" -m pytest -q -p no:cacheprovider "$root/tests/python"
