#!/usr/bin/env bash
# Everything that needs a GPU, in one run on a GPU machine (under 8 minutes
# on one H200), with the results as a table under $OUT (or ./gpu-results).
#
# Here, on the development machine (no GPU needed), pack what it runs:
#   bench/gpu/device_check.sh --pack [BUILD]   -> gpu-pack/ (binaries and the
#                                                shared libraries they need)
# There (the device tool carries gpu-pack/, which .git/info/exclude ignores):
#   bash bench/gpu/device_check.sh [gpu-pack]
#
# It runs the gpu tests (reduction kernels against the CPU; the nvlink
# transport on device memory; every collective on device buffers at 1 to 4
# ranks, staged and over nvlink, and stream ordering), the kernels'
# bandwidth against a device-to-device copy (reduce_bw), coll_perf on
# device buffers (-G 1) at 2 ranks for every collective, both ways
# (checked: #wrong must be 0), allreduce from 8 B to 1 GiB at 1, 2 and 4
# ranks staged and 2, 4 and 8 over nvlink, and nccl_perf single-rank.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = --pack ]; then
  build=${2:-build}
  pack=gpu-pack
  rm -rf "$pack" && mkdir -p "$pack/lib"
  bins=(tools/collrun bench/coll_perf bench/reduce_bw tests/cuda_reduce_test tests/device_collectives_test tests/nvlink_test)
  [ -x "$build/bench/nccl_perf" ] && bins+=(bench/nccl_perf)
  for b in "${bins[@]}"; do
    [ -x "$build/$b" ] || { echo "device_check: $build/$b is missing: build first (make build)" >&2; exit 1; }
    cp "$build/$b" "$pack/"
  done
  # The shared libraries that the GPU machine's image may lack (hwloc,
  # libxml2, OpenSSL, libcoll, ...): everything but glibc's own and CUDA's
  # driver. NCCL comes from the image's Python (nvidia-nccl-cu13).
  for b in "$pack"/*; do
    [ -f "$b" ] || continue
    ldd "$b" | awk '/=> \// {print $3}'
  done | sort -u | while read -r lib; do
    case $(basename "$lib") in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libnccl.so*|libstdc++*|libgcc_s*) ;;
      *) cp -L "$lib" "$pack/lib/" ;;
    esac
  done
  grep -qx '/gpu-pack/' .git/info/exclude 2>/dev/null || echo '/gpu-pack/' >> .git/info/exclude
  du -sh "$pack"
  exit 0
fi

pack=$(cd "${1:-gpu-pack}" && pwd)
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
export LD_LIBRARY_PATH="$pack/lib:${nccl_dir}:${LD_LIBRARY_PATH:-}"
results=$out/results.md
failed=()
step() {  # step NAME SECONDS CMD...: runs CMD with a limit, its output to $out/NAME.log
  local name=$1 limit=$2 t0=$SECONDS
  shift 2
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "| $name | $rc | $((SECONDS - t0)) s |" >> "$out/steps.md"
  [ $rc -eq 0 ] || failed+=("$name")
  return $rc
}
echo "| step | status | time |" > "$out/steps.md"
echo "|---|---|---|" >> "$out/steps.md"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1

step gpu_tests 120 "$pack/cuda_reduce_test" --gtest_brief=1
step nvlink_transport 60 "$pack/nvlink_test" --gtest_brief=1
step gpu_collectives 360 "$pack/device_collectives_test" --gtest_brief=1
step reduce_bw 60 "$pack/reduce_bw" $((256 << 20)) 50
# Device buffers staged through host memory (the default transports), and
# in place over the nvlink transport (ranks sharing the GPU by CUDA IPC).
nvlink=(env COLL_TRANSPORTS=nvlink,shm)
# coll_perf's own check (the gpu tests cover 1 to 4 ranks, both ways).
for c in allreduce broadcast reduce allgather reduce_scatter alltoall; do
  step "exact_${c}_2ranks" 60 "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -C $c -d float32 -o sum -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
  step "exact_${c}_2ranks_nvlink" 60 "${nvlink[@]}" "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -C $c -d float32 -o sum -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
done
step exact_allreduce_bf16_avg_2ranks 60 "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -d bfloat16 -o avg -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
for n in 1 2 4; do
  step "allreduce_sweep_${n}ranks" 120 "$pack/collrun" -n $n "$pack/coll_perf" -G 1 -b 8 -e 1G -f 8 -n 5 -w 2 -c 0
done
for n in 2 4 8; do
  step "allreduce_sweep_${n}ranks_nvlink" 120 "${nvlink[@]}" "$pack/collrun" -n $n "$pack/coll_perf" -G 1 -b 8 -e 1G -f 8 -n 5 -w 2 -c 0
done
[ -x "$pack/nccl_perf" ] && step nccl_allreduce_1rank 90 "$pack/nccl_perf" -b 8 -e 1G -f 8 -n 5 -w 2 -c 1

{
  echo "# device_check: $(date -u +%FT%TZ)"
  echo
  cat "$out/gpu.txt"
  echo
  cat "$out/steps.md"
  echo
  echo '## reduction kernels against a device-to-device copy'
  echo '```'; cat "$out/reduce_bw.log"; echo '```'
  for n in 1 2 4; do
    echo "## coll allreduce, $n rank(s) on the one GPU, device buffers staged through host memory"
    echo '```'; grep -v '^#  *$' "$out/allreduce_sweep_${n}ranks.log"; echo '```'
  done
  for n in 2 4 8; do
    echo "## coll allreduce, $n ranks on the one GPU, device buffers over nvlink (CUDA IPC, copy engine)"
    echo '```'; grep -v '^#  *$' "$out/allreduce_sweep_${n}ranks_nvlink.log"; echo '```'
  done
  [ -f "$out/nccl_allreduce_1rank.log" ] && { echo '## NCCL allreduce, 1 rank'; echo '```'; cat "$out/nccl_allreduce_1rank.log"; echo '```'; }
} > "$results"
# At most 8 files come back: the table, the step list, and the logs in one archive.
tar -C "$out" -czf "$out/logs.tar.gz" --exclude=logs.tar.gz --exclude=results.md --exclude=steps.md . 2>/dev/null
find "$out" -name '*.log' -delete
cat "$results"
if [ ${#failed[@]} -gt 0 ]; then
  echo "device_check: FAILED: ${failed[*]}"
  exit 1
fi
echo "device_check: all passed"
