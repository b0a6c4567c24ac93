// Which memory a pointer is, asked of the CUDA driver only when the process
// has loaded it: a process that never touched CUDA has no device pointers,
// and asking would create a context (hundreds of milliseconds, and memory
// on every GPU) in programs that only use host buffers.
#include "reduce/backend.h"

#include <cuda.h>
#include <dlfcn.h>

#include <atomic>

namespace coll::reduce {
namespace {

using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);

// cuPointerGetAttribute of the driver already loaded (RTLD_NOLOAD), or null.
// Looked up until found; found once, kept.
PointerGetAttribute driver_query() {
  static std::atomic<PointerGetAttribute> found{nullptr};
  if (PointerGetAttribute f = found.load(std::memory_order_acquire)) return f;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  auto f = reinterpret_cast<PointerGetAttribute>(dlsym(lib, "cuPointerGetAttribute"));
  dlclose(lib);  // (still loaded: NOLOAD took a reference only to this handle)
  found.store(f, std::memory_order_release);
  return f;
}

}  // namespace

MemoryKind memory_kind_of(const void* p) {
  if (p == nullptr) return MemoryKind::kHost;
  PointerGetAttribute query = driver_query();
  if (query == nullptr) return MemoryKind::kHost;
  unsigned int type = 0;
  // Fails (CUDA_ERROR_INVALID_VALUE) for memory CUDA does not know: host.
  if (query(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p)) != CUDA_SUCCESS)
    return MemoryKind::kHost;
  return type == CU_MEMORYTYPE_DEVICE ? MemoryKind::kCuda : MemoryKind::kHost;
}

}  // namespace coll::reduce
