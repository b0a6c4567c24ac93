// Which instruction set the reduction kernels use. The library picks the
// widest one this CPU (and its OS) supports, once, at first use;
// COLL_REDUCE_ISA=portable|avx2|avx512 forces one, so that tests and
// benchmarks can run every kernel on a machine that has them all.
#pragma once

#include <coll/coll.h>

#include <cstddef>

namespace coll::reduce {

enum class Isa { kPortable, kAvx2, kAvx512 };
inline constexpr Isa kAllIsas[] = {Isa::kPortable, Isa::kAvx2, Isa::kAvx512};

const char* isa_name(Isa isa);  // "portable", "avx2", "avx512"
bool isa_supported(Isa isa);    // by this CPU and this build
Isa best_isa();                 // the widest supported one
Isa active_isa();               // COLL_REDUCE_ISA if set, else best_isa()

using ReduceFn = void (*)(coll_datatype_t, coll_redop_t, void*, const void*, const void*, size_t);
// The kernel of one instruction set; calling it on a CPU without that
// instruction set is undefined, so check isa_supported first.
ReduceFn reduce_kernel(Isa isa);

// Defined in reduce_<isa>.cc: the three compilations of kernels.inc.
namespace portable {
void reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t n);
}
namespace avx2 {
void reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t n);
}
namespace avx512 {
void reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t n);
}

}  // namespace coll::reduce
