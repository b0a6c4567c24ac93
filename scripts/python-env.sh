#!/usr/bin/env bash
# The Python environment of the Python tests: a virtual environment at
# BUILD/pyenv with numpy, ml_dtypes (NumPy's bfloat16), pytest and mpi4py
# (its wheel loads the system's libmpi: Open MPI here), and with
# --torch also PyTorch (the CUDA build from PyPI, which runs on CPU) and
# ninja, which builds its extensions. Made once, reused while what it needs
# imports.
#   scripts/python-env.sh [BUILD] [--torch]   -> prints the environment's python
#
# PyTorch comes without triton (torch.compile's compiler, 1 GB that nothing
# here uses), with no pip cache, and one requirement at a time, so that the
# disk holds at most one requirement's wheels beside what is installed
# (docs/PYTHON.md gives the peaks measured).
set -euo pipefail
build=${1:-build}
torch=0
[ "${2:-}" = --torch ] && torch=1
env="$build/pyenv"
py="$env/bin/python"

pip_install() {
  "$py" -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-warn-conflicts "$@" >&2 && return 0
  echo "python-env: pip install $* failed (pip's error is above)." >&2
  echo "python-env: it needs PyPI and free disk; free now where $env is:" >&2
  df -h "$env" >&2 || true
  exit 1
}

if [ ! -x "$py" ]; then
  python3 -m venv "$env" >&2 || { echo "python-env: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
fi
if ! "$py" -c "import numpy, ml_dtypes, pytest, mpi4py" 2>/dev/null; then
  echo "python-env: installing numpy ml_dtypes pytest mpi4py into $env (from PyPI)" >&2
  pip_install numpy ml_dtypes pytest mpi4py
fi
if [ "$torch" = 1 ] && ! "$py" -c "import torch, ninja" 2>/dev/null; then
  echo "python-env: installing torch and ninja into $env (from PyPI, about 4.5 GB)" >&2
  pip_install ninja
  pip_install --no-deps torch
  # torch's own requirements, as its metadata gives them, less triton and the extras.
  mapfile -t needs < <("$py" -c '
from importlib.metadata import requires
for r in requires("torch") or []:
    if "extra ==" not in r and not r.startswith("triton"):
        print(r)')
  for need in "${needs[@]}"; do
    pip_install "$need"
  done
  "$py" -c "import torch" >&2 ||
    { echo "python-env: torch is installed but does not import (its error is above)" >&2; exit 1; }
fi
echo "$py"
