#include "base/cuda_device.h"

#include "base/error.h"

#include <cuda_runtime.h>

namespace coll {
namespace {
void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    fail(Code::kSystem, "CUDA: ", what, " failed: ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
         "): check the device with nvidia-smi");
}
}  // namespace

ScopedDevice::ScopedDevice(int device) {
  if (device < 0) return;
  int current = -1;
  check(cudaGetDevice(&current), "cudaGetDevice");
  if (current == device) return;
  check(cudaSetDevice(device), "cudaSetDevice");
  previous_ = current;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) cudaSetDevice(previous_);  // errors ignored: a destructor, maybe on an error's way out
}

}  // namespace coll
