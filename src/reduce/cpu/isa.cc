#include "reduce/cpu/isa.h"

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

#include <string>

#if defined(COLL_X86_KERNELS)
#include <cpuid.h>
#endif

namespace coll::reduce {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    default:
      return "portable";
  }
}

#if defined(COLL_X86_KERNELS)
namespace {
// CPUID leaf 1, ECX bit 29 (clang's __builtin_cpu_supports has no "f16c").
bool has_f16c() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
}  // namespace
#endif

bool isa_supported(Isa isa) {
#if defined(COLL_X86_KERNELS)
  // libgcc's checks include the OS's consent (XGETBV) to save the wide registers.
  switch (isa) {
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && has_f16c();
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && has_f16c();
    default:
      return true;
  }
#else
  return isa == Isa::kPortable;
#endif
}

Isa best_isa() {
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2})
    if (isa_supported(isa)) return isa;
  return Isa::kPortable;
}

Isa active_isa() {
  static const Isa chosen = [] {
    std::string want = config::get_string("COLL_REDUCE_ISA");
    Isa isa = best_isa();
    if (!want.empty()) {
      bool known = false;
      for (Isa candidate : kAllIsas) {
        if (want != isa_name(candidate)) continue;
        known = true;
        if (!isa_supported(candidate))
          fail(Code::kInvalidArgument, "COLL_REDUCE_ISA=", want,
               ": this CPU or build lacks it (best here: ", isa_name(best_isa()), ")");
        isa = candidate;
      }
      if (!known) fail(Code::kInvalidArgument, "COLL_REDUCE_ISA=", want, ": expected portable, avx2 or avx512");
    }
    log::info(log::kInit, "reduction kernels: ", isa_name(isa));
    return isa;
  }();
  return chosen;
}

ReduceFn reduce_kernel(Isa isa) {
#if defined(COLL_X86_KERNELS)
  if (isa == Isa::kAvx512) return &avx512::reduce;
  if (isa == Isa::kAvx2) return &avx2::reduce;
#endif
  (void)isa;
  return &portable::reduce;
}

}  // namespace coll::reduce
