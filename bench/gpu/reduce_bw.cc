// reduce_bw — the cuda backend's reduction kernels against a device-to-device
// copy on one GPU, in bytes read plus written per second: a sum of two
// inputs moves 3 x its size, a copy 2 x. Also what telling a device pointer
// from a host one costs per call (every collective asks). Needs a GPU.
//
//   reduce_bw [bytes per input, default 256M] [iterations, default 50]
#include "reduce/backend.h"
#include "reduce/dtype.h"

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "reduce_bw: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// Mean seconds of `iters` runs of fn on `stream`, after 3 warm-ups.
template <typename Fn>
double seconds(cudaStream_t stream, int iters, Fn&& fn) {
  for (int i = 0; i < 3; ++i) fn();
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  check(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) fn();
  check(cudaEventRecord(stop, stream), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start), cudaEventDestroy(stop);
  return ms / 1e3 / iters;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : size_t{256} << 20;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 50;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties (is there a GPU?)");
  void *a, *b, *out;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&out, bytes), "cudaMalloc");
  check(cudaMemset(a, 0, bytes), "cudaMemset");
  check(cudaMemset(b, 0, bytes), "cudaMemset");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  const coll::reduce::Backend& gpu = coll::reduce::backend_for(coll::MemoryKind::kCuda);

  const double copy_s = seconds(stream, iters, [&] { gpu.copy(out, a, bytes, stream); });
  const double copy_gbs = 2.0 * bytes / copy_s / 1e9;
  std::printf("# reduce_bw on %s, %zu bytes per input, %d iterations\n", prop.name, bytes, iters);
  std::printf("%-10s %-5s %12s %10s %8s\n", "kind", "op", "time_us", "GB/s", "of_copy");
  std::printf("%-10s %-5s %12.1f %10.1f %8.3f\n", "copy", "-", copy_s * 1e6, copy_gbs, 1.0);
  for (coll_datatype_t t : {COLL_FLOAT32, COLL_BFLOAT16, COLL_FLOAT16, COLL_INT32, COLL_FLOAT64}) {
    const size_t count = bytes / coll::reduce::datatype_size(t);
    const double s = seconds(stream, iters, [&] { gpu.reduce(t, COLL_SUM, out, a, b, count, stream); });
    const double gbs = 3.0 * bytes / s / 1e9;
    std::printf("%-10s %-5s %12.1f %10.1f %8.3f\n", coll::reduce::datatype_name(t), "sum", s * 1e6, gbs,
                gbs / copy_gbs);
  }
  // memory_kind_of per call, on a device and on a host pointer.
  std::vector<char> host(4096);
  for (const auto& [what, p] : {std::pair<const char*, const void*>{"device", a}, {"host", host.data()}}) {
    const int calls = 200000;
    int device_seen = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) device_seen += coll::reduce::memory_kind_of(p) == coll::MemoryKind::kCuda;
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
    std::printf("# memory_kind_of(%s pointer): %.1f ns per call (%s)\n", what, ns,
                device_seen == calls ? "device"
                : device_seen == 0   ? "host"
                                     : "mixed!");
  }
  cudaFree(a), cudaFree(b), cudaFree(out);
  return 0;
}
