// Which backend serves which memory kind: the CPU kernels for host memory,
// and in CUDA builds reduce/cuda/ for device memory.
#include "reduce/backend.h"

#include "base/error.h"
#include "reduce/reduce.h"
#ifdef COLL_WITH_CUDA
#include "reduce/cuda/backend.h"
#endif

#include <cstdlib>
#include <cstring>

namespace coll::reduce {
namespace {

// The stream is ignored: host work is done when the call returns.
void cpu_copy(void* dst, const void* src, size_t bytes, void*) { std::memmove(dst, src, bytes); }
void cpu_reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count, void*) {
  reduce(dtype, op, dst, a, b, count);
}
void cpu_divide(coll_datatype_t dtype, void* dst, size_t count, int divisor, void*) {
  divide(dtype, dst, count, divisor);
}

void* cpu_allocate(size_t bytes, const void*, void*) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, bytes == 0 ? 64 : bytes) != 0)
    fail(Code::kSystem, "cannot allocate ", bytes, " bytes of scratch memory");
  return p;
}

const Backend kCpu{.name = "cpu",
                   .copy = cpu_copy,
                   .reduce = cpu_reduce,
                   .divide = cpu_divide,
                   .allocate = cpu_allocate,
                   .release = [](void* p, void*) { std::free(p); }};

}  // namespace

const Backend& backend_for(MemoryKind kind) {
  if (kind == MemoryKind::kHost) return kCpu;
#ifdef COLL_WITH_CUDA
  if (kind == MemoryKind::kCuda) return cuda::backend();
#endif
  fail(Code::kInvalidArgument, memory_kind_name(kind), " memory: this build has no ", memory_kind_name(kind),
       " backend for copies and reductions");
}

#ifndef COLL_WITH_CUDA
MemoryKind memory_kind_of(const void*) { return MemoryKind::kHost; }
#endif

}  // namespace coll::reduce
