#!/usr/bin/env bash
# Recovery time of examples/elastic_train against a shard's size and the
# timeout, and what a restart's disk part would cost for the same shards
# (docs/PERFORMANCE.md, "Recovering from failures").
#   bench/recovery_sweep.sh BUILD [KiB ...]     (default: 32 1024 16384 65536)
# BUILD holds tools/collrun and src/libcoll; the example is compiled here.
set -euo pipefail
build=$(cd "${1:?usage: recovery_sweep.sh BUILD [KiB ...]}" && pwd)
shift
root=$(cd "$(dirname "$0")/.." && pwd)
sizes=("${@:-32 1024 16384 65536}")
read -ra sizes <<<"${sizes[*]}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -std=gnu11 -O2 -I"$root/include" "$root/examples/elastic_train.c" -L"$build/src" -lcoll \
  -Wl,-rpath,"$build/src" -o "$work/elastic_train"
for kib in "${sizes[@]}"; do
  for timeout in 2000 60000; do
    for trial in 1 2; do
      out=$(COLL_TIMEOUT_MS=$timeout "$build/tools/collrun" --spares 2 --grace 600 -n 8 "$work/elastic_train" "$kib" 2>&1 || true)
      rebuilt=$(grep -o "rebuilt in [0-9.]* ms" <<<"$out" | awk '{print $3}' | tr '\n' ' ')
      first=$(grep -o "done [0-9.]* ms" <<<"$out" | awk '{print $2}' | tr '\n' ' ')
      step=$(grep -o "a step took [0-9.]* ms" <<<"$out" | awk '{print $4}')
      equal=$(grep -c "the model equals" <<<"$out" || true)
      echo "shard ${kib} KiB, timeout ${timeout} ms, run $trial: rebuilt [ $rebuilt] first step [ $first] a step $step ms, bit for bit: $equal"
    done
  done
  # A restart's disk part: the 8 shards written with fsync, then read back cold (as root).
  start=$(date +%s%N)
  for d in 0 1 2 3 4 5 6 7; do dd if=/dev/urandom of="$work/shard.$d" bs=1K count="$kib" conv=fsync status=none; done
  written=$(date +%s%N)
  sync
  [[ -w /proc/sys/vm/drop_caches ]] && echo 3 >/proc/sys/vm/drop_caches
  cold=$(date +%s%N)
  cat "$work"/shard.* >/dev/null
  read_back=$(date +%s%N)
  echo "shard ${kib} KiB on disk: 8 written with fsync in $(((written - start) / 1000000)) ms, read back in $(((read_back - cold) / 1000000)) ms"
  rm -f "$work"/shard.*
done
