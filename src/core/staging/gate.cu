// The fallback gate (cuda_stager.cc): one thread that holds its stream until
// the host writes `value` (or later) into host-mapped `flag`, for devices
// without stream memory operations (cuStreamWaitValue32).
#include "core/staging/gate.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace coll::staging {
namespace {

__global__ void gate_kernel(const volatile uint32_t* flag, uint32_t value) {
  while (static_cast<int32_t>(*flag - value) < 0) __nanosleep(2000);
}

}  // namespace

int load_gate() {
  cudaFuncAttributes attrs{};
  return cudaFuncGetAttributes(&attrs, gate_kernel);
}

int launch_gate(void* stream, const volatile uint32_t* flag, uint32_t value) {
  gate_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(flag, value);
  return cudaGetLastError();
}

}  // namespace coll::staging
