#include "core/staging/stager.h"

#include "base/error.h"

#include <cstring>

namespace coll::staging {

#ifdef COLL_WITH_CUDA
std::unique_ptr<Stager> make_cuda_stager(size_t bytes, int64_t timeout_ms);  // cuda_stager.cc
#endif

void HostStager::copy(int, bool, const Copy2D& c) {
  for (size_t r = 0; r < c.rows; ++r)
    std::memmove(static_cast<char*>(c.dst) + r * c.dst_pitch, static_cast<const char*>(c.src) + r * c.src_pitch,
                 c.width);
}

std::unique_ptr<Stager> make_stager(MemoryKind kind, size_t bytes, int64_t timeout_ms) {
  (void)timeout_ms;
  if (kind == MemoryKind::kHost) return std::make_unique<HostStager>(bytes);
#ifdef COLL_WITH_CUDA
  return make_cuda_stager(bytes, timeout_ms);
#else
  fail(Code::kInvalidArgument, memory_kind_name(kind), " buffers: this build has no CUDA (configure with CUDA found)");
#endif
}

}  // namespace coll::staging
