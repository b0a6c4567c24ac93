// For every file that calls the CUDA runtime: its errors as coll errors
// (kSystem). The current device is switched by base/cuda_device.h.
#pragma once

#include "base/cuda_device.h"

namespace coll::reduce::cuda {

// Throws coll::Error naming `what` and the CUDA error unless `err` is 0
// (cudaSuccess).
void check(int err, const char* what);

}  // namespace coll::reduce::cuda
