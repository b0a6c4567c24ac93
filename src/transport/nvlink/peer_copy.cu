// The SM copy (peer_copy.h): 16-byte loads and stores where both ends are
// 16-byte aligned, a byte loop for the rest. The grid is sized to the
// device so that a large copy still has every SM busy.
#include "transport/nvlink/peer_copy.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace coll::transport::nvlink {
namespace {

__global__ void copy_kernel(char* dst, const char* src, size_t bytes) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t head = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const size_t vectors = bytes / 16;
    auto* d = reinterpret_cast<uint4*>(dst);
    const auto* s = reinterpret_cast<const uint4*>(src);
    for (size_t i = first; i < vectors; i += stride) d[i] = s[i];
    head = vectors * 16;
  }
  for (size_t i = head + first; i < bytes; i += stride) dst[i] = src[i];
}

int blocks_for(size_t bytes) {
  static int sms = [] {
    int device = 0, n = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device);
    return n > 0 ? n : 1;
  }();
  const size_t wanted = (bytes / 16 + 255) / 256;
  return static_cast<int>(wanted < 1 ? 1 : wanted > static_cast<size_t>(sms) * 4 ? sms * 4 : wanted);
}

}  // namespace

int load_peer_copy() {
  cudaFuncAttributes attrs{};
  return cudaFuncGetAttributes(&attrs, copy_kernel);
}

int launch_peer_copy(void* stream, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  copy_kernel<<<blocks_for(bytes), 256, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<char*>(dst),
                                                                                static_cast<const char*>(src), bytes);
  return cudaGetLastError();
}

}  // namespace coll::transport::nvlink
