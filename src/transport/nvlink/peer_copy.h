// A copy by the GPU's own cores (SMs) instead of its copy engine: a kernel
// that reads or writes the peer's mapped memory. For small messages, where
// the copy engine's start-up cost dominates (COLL_NVLINK_KERNEL_BYTES).
#pragma once

#include <cstddef>

namespace coll::transport::nvlink {

// Enqueues a copy of `bytes` from `src` to `dst` on `stream` (a
// cudaStream_t); returns the launch's cudaError_t (0 on success).
int launch_peer_copy(void* stream, void* dst, const void* src, size_t bytes);

// Loads the kernel now rather than at its first launch (CUDA loads lazily,
// and a load may wait for the whole context: never while a stream is held).
int load_peer_copy();

}  // namespace coll::transport::nvlink
