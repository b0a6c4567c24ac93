#!/usr/bin/env bash
# Installs the Debian packages coll builds and tests with, and only those that
# are missing. Idempotent: a second run installs nothing and says so.
# Extra package names on the command line are installed too.
set -euo pipefail

packages=(
  g++ make cmake pkg-config     # toolchain
  libgtest-dev libgmock-dev     # tests
  libbenchmark-dev              # microbenchmarks
  libssl-dev                    # HMAC-SHA256 for connection authentication
  libhwloc-dev libxml2-dev      # topology: hwloc, and NCCL topology files
  libopenmpi-dev openmpi-bin    # MPI bootstrap and mpirun tests (COLL_WITH_MPI); the mpi_perf peer
  libgloo-dev                   # the gloo_perf peer (COLL_WITH_GLOO)
  iproute2                      # interface discovery, emulated clusters
  libibverbs-dev                # the verbs headers (COLL_WITH_IB); libibverbs is loaded at run time
  rdma-core ibverbs-providers   # the verbs user space the ib tests run on (tests/rxe)
  gnuplot-nox                   # scripts/compare.sh's plots
  chromium python3-pil          # collsim's animated SVG, rendered and checked in a test
  nlohmann-json3-dev            # the simulator's cluster files (JSON)
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
# An apt cache with no lists (a fresh machine) cannot find anything: update first.
if ! "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
  "${sudo_cmd[@]}" apt-get update
  "${sudo_cmd[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
