// What one core can move, in the three kinds of line traffic that a 2-rank
// allreduce on private buffers cannot avoid (docs/PERFORMANCE.md, "What one
// core can move"): each rank reads its input from memory, writes its output
// to memory, and reads from the other core's cache as many bytes as its
// input holds (its peer's share of the input, then its peer's results).
//
//   build/bench/micro/core_bench
//
//   core/read/64M           64 MiB read from memory, nothing written
//   core/stream_write/64M   64 MiB written with non-temporal stores, from a
//                           1 MiB source that stays in L2
//   core/copy/64M           both at once: 64 MiB copied memory to memory
//                           with non-temporal stores
//   core/cross_read/1M      1 MiB read right after a thread on another CPU
//                           wrote it (the first two CPUs this process may
//                           use); only the read is timed
//
// bytes_per_second counts the bytes of the kind named (for copy: the bytes
// read). If the kinds share what one core can have in flight, a rank's time
// is near the sum of their times, not their maximum.
#include "reduce/cpu/stream.h"
#include "support/cpus.h"

#include <benchmark/benchmark.h>

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace {

constexpr size_t kMemory = 64u << 20, kL2 = 1u << 20;

// 64-byte aligned, touched, so that no page fault is timed.
struct Buffer {
  explicit Buffer(size_t bytes) : words(bytes / sizeof(uint64_t) + 8, 1) {}
  uint64_t* data() { return words.data() + (8 - reinterpret_cast<uintptr_t>(words.data()) / 8 % 8) % 8; }
  std::vector<uint64_t> words;
};

uint64_t sum(const uint64_t* p, size_t bytes) {
  uint64_t s = 0;
  for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) s += p[i];
  return s;
}

void read(benchmark::State& state) {
  Buffer in(kMemory);
  for (auto _ : state) benchmark::DoNotOptimize(sum(in.data(), kMemory));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMemory));
}

void stream_write(benchmark::State& state) {
  Buffer src(kL2), out(kMemory);
  for (auto _ : state) {
    for (size_t at = 0; at < kMemory; at += kL2)
      coll::reduce::stream_copy(reinterpret_cast<char*>(out.data()) + at, src.data(), kL2);
    coll::reduce::stream_fence();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMemory));
}

void copy(benchmark::State& state) {
  Buffer in(kMemory), out(kMemory);
  for (auto _ : state) {
    coll::reduce::stream_copy(out.data(), in.data(), kMemory);
    coll::reduce::stream_fence();
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kMemory));
}

bool pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

// A writer thread on one CPU fills the buffer, then this thread, on
// another, reads it; they take turns through `turn` (even: the writer's;
// negative: stop). Only the read is timed. This thread gets its affinity
// back at the end.
void cross_read(benchmark::State& state) {
  const std::vector<int> cpus = coll::testing::allowed_cpus();
  cpu_set_t before;
  if (cpus.size() < 2 || sched_getaffinity(0, sizeof(before), &before) != 0 || !pin(cpus[0])) {
    state.SkipWithError("needs two CPUs");
    return;
  }
  const int writer_cpu = cpus[1];
  Buffer buf(kL2);
  std::atomic<int64_t> turn{0};
  std::atomic<bool> pinned{true};
  std::thread writer([&] {
    pinned = pin(writer_cpu);
    for (int64_t t = 0;; t += 2) {
      int64_t now;
      while ((now = turn.load(std::memory_order_acquire)) != t && now >= 0) {
      }
      if (now < 0) return;
      std::memset(buf.data(), static_cast<int>(t), kL2);
      turn.store(t + 1, std::memory_order_release);
    }
  });
  int64_t t = 0;
  for (auto _ : state) {
    while (turn.load(std::memory_order_acquire) != t + 1) {
    }
    const auto start = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(sum(buf.data(), kL2));
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    t += 2;
    turn.store(t, std::memory_order_release);
  }
  while (turn.load(std::memory_order_acquire) != t + 1) {  // its last fill, then stop
  }
  turn.store(-1, std::memory_order_release);
  writer.join();
  pthread_setaffinity_np(pthread_self(), sizeof(before), &before);
  if (!pinned) state.SkipWithError("could not pin the writer to a CPU of its own");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * kL2));
}

}  // namespace

BENCHMARK(read)->Name("core/read/64M")->UseRealTime();
BENCHMARK(stream_write)->Name("core/stream_write/64M")->UseRealTime();
BENCHMARK(copy)->Name("core/copy/64M")->UseRealTime();
BENCHMARK(cross_read)->Name("core/cross_read/1M")->UseManualTime();
BENCHMARK_MAIN();
