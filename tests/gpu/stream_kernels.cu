// Kernels for the stream-ordering test: a slow writer (it spins for a while
// before writing, so an operation that did not wait for it would read stale
// input) and a reader that copies the output to where the test checks it.
#include "gpu/stream_kernels.h"

#include <cuda_runtime.h>

namespace coll::testing {
namespace {

__global__ void slow_fill(float* x, size_t n, float value, long long spin_cycles) {
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    const long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
  }
  __syncthreads();
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    x[i] = value + static_cast<float>(i % 7);
}

__global__ void copy_out(float* dst, const float* src, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

int launch_slow_fill(void* stream, float* x, size_t n, float value, long long spin_cycles) {
  slow_fill<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, n, value, spin_cycles);
  return cudaGetLastError();
}

int load_stream_kernels() {
  cudaFuncAttributes a{};
  if (cudaError_t e = cudaFuncGetAttributes(&a, slow_fill); e != cudaSuccess) return e;
  return cudaFuncGetAttributes(&a, copy_out);
}

int launch_copy_out(void* stream, float* dst, const float* src, size_t n) {
  copy_out<<<64, 256, 0, static_cast<cudaStream_t>(stream)>>>(dst, src, n);
  return cudaGetLastError();
}

}  // namespace coll::testing
