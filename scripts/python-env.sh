#!/usr/bin/env bash
# The Python environment of the Python tests: a virtual environment at
# BUILD/pyenv with numpy, ml_dtypes (NumPy's bfloat16), pytest and mpi4py
# (its wheel loads the system's libmpi: Open MPI here), and with
# --torch also PyTorch (the CUDA build from PyPI, about 5 GB, which runs on
# CPU) and ninja, which builds its extensions. Made once, reused while what it needs imports.
#   scripts/python-env.sh [BUILD] [--torch]   -> prints the environment's python
set -euo pipefail
build=${1:-build}
want=(numpy ml_dtypes pytest mpi4py)
[ "${2:-}" = --torch ] && want+=(torch ninja)  # ninja: torch.utils.cpp_extension builds with it
env="$build/pyenv"
py="$env/bin/python"
modules=$(IFS=,; echo "${want[*]}")
if [ ! -x "$py" ]; then
  python3 -m venv "$env" >&2 || { echo "python-env: python3 -m venv failed (install python3-venv)" >&2; exit 1; }
fi
if ! "$py" -c "import ${modules}" 2>/dev/null; then
  echo "python-env: installing ${want[*]} into $env (from PyPI)" >&2
  "$py" -m pip install --quiet --disable-pip-version-check "${want[@]}" >&2 ||
    { echo "python-env: pip install ${want[*]} failed: is PyPI reachable?" >&2; exit 1; }
fi
echo "$py"
