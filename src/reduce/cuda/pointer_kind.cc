// Which memory a pointer is, asked of the CUDA driver only when the process
// has loaded it: a process that never touched CUDA has no device pointers,
// and asking would create a context (hundreds of milliseconds, and memory
// on every GPU) in programs that only use host buffers.
#include "reduce/backend.h"

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstring>

namespace coll::reduce {
namespace {

using PointerGetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);

// Whether libcuda is among the loaded objects. Looked for again only when
// objects were loaded since the last look (dlpi_adds): this runs on every
// call, and dlopen(RTLD_NOLOAD) of a library not loaded searches the whole
// library path on disk (tens of microseconds), where this costs nothing.
bool driver_loaded() {
  static std::atomic<unsigned long long> adds_seen{0};
  struct Look {
    unsigned long long seen, adds = 0;
    bool first = true, found = false;
  } look{adds_seen.load(std::memory_order_relaxed)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* l = static_cast<Look*>(data);
        if (l->first) {
          l->first = false;
          l->adds = info->dlpi_adds;
          if (l->adds == l->seen) return 1;  // nothing new since the last look
        }
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libcuda.so") != nullptr) l->found = true;
        return l->found ? 1 : 0;
      },
      &look);
  adds_seen.store(look.adds, std::memory_order_relaxed);
  return look.found;
}

// cuPointerGetAttribute of the driver already loaded, or null. Looked up
// until found; found once, kept.
PointerGetAttribute driver_query() {
  static std::atomic<PointerGetAttribute> found{nullptr};
  if (PointerGetAttribute f = found.load(std::memory_order_acquire)) return f;
  if (!driver_loaded()) return nullptr;
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
