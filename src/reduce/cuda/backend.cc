// The `cuda` memory kind's copies and reductions (reduce/backend.h): copies
// by the copy engine (cudaMemcpyAsync), reductions by the kernels of
// kernels.cu, all ordered on the caller's stream and run on the device that
// holds the destination.
#include "reduce/cuda/backend.h"

#include "base/error.h"
#include "reduce/cuda/check.h"
#include "reduce/cuda/kernels.h"
#include "reduce/dtype.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <vector>

namespace coll::reduce::cuda {
namespace {

// The device of `dst`, or -1 for host memory.
int device_of(const void* dst) {
  cudaPointerAttributes attrs{};
  check(cudaPointerGetAttributes(&attrs, dst), "finding the device of a buffer (cudaPointerGetAttributes)");
  return attrs.type == cudaMemoryTypeDevice || attrs.type == cudaMemoryTypeManaged ? attrs.device : -1;
}

bool overlap(const void* dst, const void* src, size_t bytes) {
  auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  return d < s + bytes && s < d + bytes;
}

// cudaMemcpyAsync does not allow overlap, the backend's copy does (as
// memmove): an overlapping copy goes through a temporary.
void copy(void* dst, const void* src, size_t bytes, void* stream) {
  if (bytes == 0 || dst == src) return;
  ScopedDevice on(device_of(dst));
  auto s = static_cast<cudaStream_t>(stream);
  if (!overlap(dst, src, bytes)) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    return;
  }
  void* tmp = nullptr;
  check(cudaMallocAsync(&tmp, bytes, s), "cudaMallocAsync (a temporary for an overlapping copy)");
  check(cudaMemcpyAsync(tmp, src, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
  check(cudaMemcpyAsync(dst, tmp, bytes, cudaMemcpyDefault, s), "cudaMemcpyAsync");
  check(cudaFreeAsync(tmp, s), "cudaFreeAsync");
}

void reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count,
            void* stream) {
  if (count == 0) return;
  ScopedDevice on(device_of(dst));
  check(launch_reduce(dtype, op, dst, a, b, count, stream), "launching the reduction kernel");
}

void divide(coll_datatype_t dtype, void* dst, size_t count, int divisor, void* stream) {
  if (count == 0) return;
  ScopedDevice on(device_of(dst));
  check(launch_divide(dtype, dst, count, divisor, stream), "launching the division kernel");
}

// cudaMalloc, not a stream-ordered pool: a transport that shares device
// memory between processes (CUDA IPC, the nvlink transport) sends from
// these buffers too, and memory from cudaMallocAsync pools cannot be
// shared so. cudaMalloc does not wait for other streams; cudaFree waits for
// the whole device, the callers' gated streams included, so a buffer
// released while operations may be in flight is kept until the
// communicator's end.
std::mutex retired_mutex;
std::vector<void*> retired;

void* allocate(size_t bytes, const void* near, void*) {
  ScopedDevice on(device_of(near));
  void* p = nullptr;
  check(cudaMalloc(&p, bytes == 0 ? 1 : bytes), "cudaMalloc (the executor's staging and scratch)");
  return p;
}

// Errors ignored: on the way out, maybe of an error.
void release(void* p, void* stream) {
  std::vector<void*> now{p};
  {
    std::lock_guard<std::mutex> lock(retired_mutex);
    if (stream != nullptr) {
      retired.push_back(p);
      return;
    }
    now.insert(now.end(), retired.begin(), retired.end());
    retired.clear();
  }
  // Outside the lock: cudaFree waits for the device, and another
  // communicator's worker may need the lock to finish what it waits for.
  for (void* r : now) cudaFree(r);  // a communicator's end: none of its operations holds a stream
}

void wait(void* stream) {
  check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "waiting for a copy or reduction");
}

const Backend kCuda{.name = "cuda",
                    .copy = copy,
                    .reduce = reduce,
                    .divide = divide,
                    .allocate = allocate,
                    .release = release,
                    .wait = wait};

}  // namespace

const Backend& backend() { return kCuda; }

void check(int err, const char* what) {
  if (err == cudaSuccess) return;
  auto e = static_cast<cudaError_t>(err);
  fail(Code::kSystem, "CUDA: ", what, " failed: ", cudaGetErrorName(e), " (", cudaGetErrorString(e),
       "): check the device with nvidia-smi, and that the buffers are device memory of a live context");
}

}  // namespace coll::reduce::cuda
