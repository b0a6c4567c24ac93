#!/usr/bin/env bash
# ctest python.package: the Python package's tests (pytest) against this
# build's libcoll, in the environment scripts/python-env.sh makes.
set -euo pipefail
build=$(cd "${1:?usage: run.sh BUILD}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
torch=${2:-}  # --torch: the torch backend's tests, with PyTorch in the environment
py=$("$root/scripts/python-env.sh" "$build" $torch)
# Installed as a user would (pip install ./python, no index), afresh each run.
"$py" -m pip install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall "$root/python"
export COLL_LIBRARY="$build/src/libcoll.so.0" COLL_BUILD_DIR="$build"
cd "$build"  # not the source tree: the installed package is the one imported
export TORCH_EXTENSIONS_DIR="$build/torch_extensions"
if [ "$torch" = --torch ]; then
  exec "$py" -m pytest -q -p no:cacheprovider "$root"/tests/python/test_torch*.py
fi
exec "$py" -m pytest -q -p no:cacheprovider "$root/tests/python" --ignore-glob="$root/tests/python/test_torch*.py"
