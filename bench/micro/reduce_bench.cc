// Reduction kernels in GB/s beside memcpy and a plain a += b loop, per
// instruction set and dtype, in cache (32 KiB), in L2 (1 MiB) and in memory
// (64 MiB), on one thread and on two (one buffer set each).
//
//   build/bench/micro/reduce_bench --benchmark_filter='64M'
//
// bytes_per_second counts every byte the loop touches: memcpy reads one
// buffer and writes one (2 x size); a reduction dst = a + b in place reads
// two and writes one (3 x size). That is the STREAM convention, so the
// numbers compare with the machine's memory bandwidth directly.
#include "reduce/cpu/isa.h"
#include "reduce/dtype.h"

#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using coll::reduce::Isa;

// Buffers filled with small values so that no float ever overflows or turns
// subnormal (which would measure the FPU's slow path, not the kernel).
std::vector<char> ones(size_t bytes, coll_datatype_t t) {
  std::vector<char> v(bytes, 0);
  const size_t es = coll::reduce::datatype_size(t);
  const unsigned char one16 = t == COLL_BFLOAT16 ? 0x3f : 0x3c;  // top byte of 1.0 in bf16 / f16
  for (size_t i = 0; i + es <= bytes; i += es) {
    if (t == COLL_FLOAT16 || t == COLL_BFLOAT16)
      v[i + 1] = static_cast<char>(one16);
    else if (t == COLL_FLOAT32)
      v[i + 3] = 0x3f;
    else if (t == COLL_FLOAT64)
      v[i + 7] = 0x3f;
    else
      v[i] = 1;
  }
  return v;
}

void memcpy_bench(benchmark::State& state, size_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 2 * bytes));
}

// The yardstick: what the compiler makes of a += b with the project's
// default flags, as the "a += b bandwidth".
void add_bench(benchmark::State& state, size_t bytes) {
  std::vector<float> a(bytes / 4, 1.0f), b(bytes / 4, 0.0f);
  for (auto _ : state) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * bytes));
}

void reduce_bench(benchmark::State& state, Isa isa, coll_datatype_t t, size_t bytes) {
  auto kernel = coll::reduce::reduce_kernel(isa);
  std::vector<char> a = ones(bytes, t), b(bytes, 0);  // b = +0: a stays 1 however often it runs
  const size_t count = bytes / coll::reduce::datatype_size(t);
  for (auto _ : state) {
    kernel(t, COLL_SUM, a.data(), a.data(), b.data(), count);
    benchmark::DoNotOptimize(a.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * 3 * bytes));
}

}  // namespace

int main(int argc, char** argv) {
  const std::pair<const char*, size_t> sizes[] = {{"32K", 32u << 10}, {"1M", 1u << 20}, {"64M", 64u << 20}};
  const coll_datatype_t dtypes[] = {COLL_FLOAT32, COLL_BFLOAT16, COLL_FLOAT16, COLL_FLOAT64, COLL_INT32, COLL_INT8};
  for (int threads : {1, 2}) {
    for (const auto& size : sizes) {
      const std::string label = size.first;
      const size_t n = size.second;
      if (threads > 1 && n < (64u << 20)) continue;  // two threads only matter against memory
      auto name = [&](const std::string& what) { return what + "/" + label; };
      benchmark::RegisterBenchmark(name("memcpy").c_str(), memcpy_bench, n)->Threads(threads)->UseRealTime();
      benchmark::RegisterBenchmark(name("a+=b/float32").c_str(), add_bench, n)->Threads(threads)->UseRealTime();
      for (Isa isa : coll::reduce::kAllIsas) {
        if (!coll::reduce::isa_supported(isa)) continue;
        for (coll_datatype_t t : dtypes)
          benchmark::RegisterBenchmark(
              name(std::string("reduce/") + coll::reduce::isa_name(isa) + "/" + coll::reduce::datatype_name(t)).c_str(),
              reduce_bench, isa, t, n)
              ->Threads(threads)
              ->UseRealTime();
      }
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
