// CUDA errors as coll errors (kSystem), for every file that calls the runtime.
#pragma once

namespace coll::reduce::cuda {

// Throws coll::Error naming `what` and the CUDA error unless `err` is 0
// (cudaSuccess).
void check(int err, const char* what);

}  // namespace coll::reduce::cuda
