#!/usr/bin/env bash
# Everything that needs a GPU, in one run on a GPU machine (under 7 minutes
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
# ranks staged and 2, 4 and 8 over nvlink (and 2 by SM kernel), 2 ranks at
# 256 MiB both ways, and nccl_perf single-rank. DEVICE_CHECK_SECONDS (420)
# bounds the whole run: steps are cut to what is left, and a step that runs
# out of time leaves its ranks' stacks (cuda-gdb) beside its log. Peers time
# out after COLL_TIMEOUT_MS=20000, so a stall names what was pending.
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
# Every step's limit is cut to what is left of this many seconds, so that
# the table and the logs are written even when the machine is slow.
deadline=${DEVICE_CHECK_SECONDS:-420}
mkdir -p "$out/logs"
# NCCL from the image's Python (nvidia-nccl-cu13), wherever its wheel put it.
site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null)
nccl_lib=$( [ -n "$site" ] && find "$site/nvidia" -name 'libnccl.so*' 2>/dev/null | head -1)
export LD_LIBRARY_PATH="$pack/lib${nccl_lib:+:$(dirname "$nccl_lib")}:${LD_LIBRARY_PATH:-}"
results=$out/results.md
failed=()
left() { echo $((deadline - SECONDS)); }
# A hung step's stacks, before it is killed: the first two processes under
# it that launch nothing (the ranks), by cuda-gdb where the image has it.
gdb=$(command -v cuda-gdb || ls /usr/local/cuda/bin/cuda-gdb 2>/dev/null)
under() { local c; for c in $(pgrep -P "$1"); do echo "$c"; under "$c"; done; }
stacks() {
  [ -n "$gdb" ] || return 0
  local p n=0
  for p in $(under "$1"); do
    case $(cat "/proc/$p/comm" 2>/dev/null) in timeout|env|collrun|"") continue ;; esac
    [ -n "$(pgrep -P "$p")" ] && continue  # a launcher: its ranks follow
    echo "### still running at $((SECONDS - $2)) s: pid $p ($(cat "/proc/$p/comm")), its stacks:"
    timeout 10 "$gdb" -batch -nx -p "$p" -ex 'thread apply 1 bt 20' -ex 'thread apply all bt 14' 2>&1 | grep -E '^(#|Thread)' | head -130
    n=$((n + 1))
    [ $n -ge 2 ] && break
  done
}
step() {  # step NAME SECONDS CMD...: runs CMD with a limit, its output to logs/NAME.log
  local name=$1 limit=$2 t0=$SECONDS stuck=
  shift 2
  # Room after the limit for the stacks (two ranks, 10 s each) and the kill.
  [ "$limit" -gt "$(($(left) - 40))" ] && limit=$(($(left) - 40))
  if [ "$limit" -lt 5 ]; then
    echo "| $name | skipped: out of time | 0 s |" >> "$out/steps.md"
    failed+=("$name")
    return 1
  fi
  timeout -k 5 $((limit + 30)) "$@" > "$out/logs/$name.log" 2>&1 &
  local pid=$!
  while kill -0 $pid 2>/dev/null; do
    if [ -z "$stuck" ] && [ $((SECONDS - t0)) -ge "$limit" ]; then
      stuck=1  # at its limit: its stacks (not into the log: its writer would overwrite them), then the kill
      stacks $pid $t0 > "$out/logs/$name.stacks" 2>&1
      kill $pid 2>/dev/null
    fi
    sleep 0.2
  done
  wait $pid
  local rc=$?
  [ -n "$stuck" ] && rc=124
  echo "| $name | $rc | $((SECONDS - t0)) s |" >> "$out/steps.md"
  [ $rc -eq 0 ] || failed+=("$name")
  return $rc
}
# A peer that stops answering is an error naming it well inside a step.
export COLL_TIMEOUT_MS=${COLL_TIMEOUT_MS:-20000}
echo "| step | status | time |" > "$out/steps.md"
echo "|---|---|---|" >> "$out/steps.md"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  echo "kernel $(uname -r), $(nproc) cores, NCCL: ${nccl_lib:-not found}"
} > "$out/gpu.txt" 2>&1

# 1. The kernels and the transport, alone.
step gpu_tests 60 "$pack/cuda_reduce_test" --gtest_brief=1
step nvlink_transport 45 "$pack/nvlink_test" --gtest_brief=1

# 2. Speed, with the GPU to itself. Device buffers staged through host
# memory (the default transports), and in place over the nvlink transport
# (ranks sharing the GPU by CUDA IPC), by copy engine or by SM kernel.
step reduce_bw 40 "$pack/reduce_bw" $((256 << 20)) 50
nvlink=(env COLL_TRANSPORTS=nvlink,shm)
# The target's size: 2 ranks at 256 MiB, by copy engine and by SM kernel.
step allreduce_256M_2ranks_nvlink 30 "${nvlink[@]}" "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -b 256M -e 256M -n 20 -w 5 -c 0
step allreduce_256M_2ranks_nvlinkkernel 30 "${nvlink[@]}" COLL_NVLINK_KERNEL_BYTES=1G "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -b 256M -e 256M -n 20 -w 5 -c 0
# One hardware queue stalled every held stream on 2026-12-04 (run 3): the
# call now waits on the host there (COLL_DEVICE_HOST_SYNC auto), which this
# checks; 32 queues, and the stream held (eager loading) for comparison.
for q in 1 32; do
  step "allreduce_256M_2ranks_nvlink_queues$q" 30 "${nvlink[@]}" CUDA_DEVICE_MAX_CONNECTIONS=$q "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -b 256M -e 256M -n 20 -w 5 -c 0
done
step allreduce_256M_2ranks_nvlink_held 30 "${nvlink[@]}" CUDA_MODULE_LOADING=EAGER "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -b 256M -e 256M -n 20 -w 5 -c 0
for n in 2 4 8; do
  step "allreduce_sweep_${n}ranks_nvlink" 50 "${nvlink[@]}" "$pack/collrun" -n $n "$pack/coll_perf" -G 1 -b 8 -e 1G -f 8 -n 5 -w 2 -c 0
done
step allreduce_sweep_2ranks_nvlinkkernel 50 "${nvlink[@]}" COLL_NVLINK_KERNEL_BYTES=1G "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -b 8 -e 1G -f 8 -n 5 -w 2 -c 0
[ -x "$pack/nccl_perf" ] && step nccl_allreduce_1rank 40 "$pack/nccl_perf" -b 8 -e 1G -f 8 -n 5 -w 2 -c 1
for n in 1 2 4; do
  step "allreduce_sweep_${n}ranks" 50 "$pack/collrun" -n $n "$pack/coll_perf" -G 1 -b 8 -e 1G -f 8 -n 3 -w 1 -c 0
done

# 3. Exactness, in parallel (16 cores): every collective on device buffers
# at 1 to 4 ranks both ways and stream ordering (6 shards of the gpu test),
# and coll_perf's own check of each collective at 2 ranks both ways.
exact() {
  for c in allreduce broadcast reduce allgather reduce_scatter alltoall; do
    step "exact_${c}_2ranks" 40 "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -C $c -d float32 -o sum -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
    step "exact_${c}_2ranks_nvlink" 40 "${nvlink[@]}" "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -C $c -d float32 -o sum -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
  done
  step exact_allreduce_bf16_avg_2ranks 40 "$pack/collrun" -n 2 "$pack/coll_perf" -G 1 -d bfloat16 -o avg -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
}
shards=6
for i in $(seq 0 $((shards - 1))); do
  step "gpu_collectives_shard$i" 400 env GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$pack/device_collectives_test" &
done
exact &
wait
# The steps run in the background failed in subshells: read them back.
failed+=($(awk -F'|' 'NR > 2 && ($3 + 0 != 0 || $3 ~ /skipped/) {gsub(/ /, "", $2); print $2}' "$out/steps.md"))

{
  echo "# device_check: $(date -u +%FT%TZ)"
  echo
  cat "$out/gpu.txt"
  echo
  cat "$out/steps.md"
  echo
  echo '## reduction kernels against a device-to-device copy'
  echo '```'; cat "$out/logs/reduce_bw.log"; echo '```'
  echo "## coll allreduce, 2 ranks on the one GPU, 256 MiB, over nvlink by copy engine, then by SM kernel"
  echo '```'; grep -h -v '^#' "$out/logs/allreduce_256M_2ranks_nvlink.log" "$out/logs/allreduce_256M_2ranks_nvlinkkernel.log"; echo '```'
  echo "## the same by copy engine with CUDA_DEVICE_MAX_CONNECTIONS=1, then 32"
  echo '```'; grep -h -v '^#' "$out/logs/allreduce_256M_2ranks_nvlink_queues1.log" "$out/logs/allreduce_256M_2ranks_nvlink_queues32.log"; echo '```'
  for n in 2 4 8; do
    echo "## coll allreduce, $n ranks on the one GPU, device buffers over nvlink (CUDA IPC, copy engine)"
    echo '```'; grep -v '^#  *$' "$out/logs/allreduce_sweep_${n}ranks_nvlink.log"; echo '```'
  done
  echo "## coll allreduce, 2 ranks on the one GPU, over nvlink by SM kernel (COLL_NVLINK_KERNEL_BYTES=1G)"
  echo '```'; grep -v '^#  *$' "$out/logs/allreduce_sweep_2ranks_nvlinkkernel.log"; echo '```'
  [ -f "$out/logs/nccl_allreduce_1rank.log" ] && { echo '## NCCL allreduce, 1 rank'; echo '```'; cat "$out/logs/nccl_allreduce_1rank.log"; echo '```'; }
  for n in 1 2 4; do
    echo "## coll allreduce, $n rank(s) on the one GPU, device buffers staged through host memory"
    echo '```'; grep -v '^#  *$' "$out/logs/allreduce_sweep_${n}ranks.log"; echo '```'
  done
} > "$results" 2>&1
# At most 8 files come back: the table, the step list, and the logs in one archive.
tar -C "$out" -czf "$out/logs.tar.gz" logs 2>/dev/null && rm -rf "$out/logs"
cat "$results"
if [ ${#failed[@]} -gt 0 ]; then
  echo "device_check: FAILED: $(printf '%s\n' "${failed[@]}" | sort -u | tr '\n' ' ')"
  exit 1
fi
echo "device_check: all passed"
