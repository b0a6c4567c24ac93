// The reduction kernels for any CPU: one element per "vector", so float16 and
// bfloat16 go through the scalar conversions of half.h.
#include "reduce/cpu/isa.h"
#include "reduce/half.h"

#include <cstdint>
#include <type_traits>

namespace coll::reduce::portable {

constexpr size_t kLanes = 1;
using Vec = float;

inline Vec load_f16(const uint16_t* p) { return half_to_float(*p); }
inline void store_f16(uint16_t* p, Vec v) { *p = float_to_half(v); }
inline Vec load_bf16(const uint16_t* p) { return bfloat16_to_float(*p); }
inline void store_bf16(uint16_t* p, Vec v) { *p = float_to_bfloat16(v); }
inline Vec add(Vec a, Vec b) { return a + b; }
inline Vec mul(Vec a, Vec b) { return a * b; }
inline Vec min_of(Vec a, Vec b) { return b < a ? b : a; }
inline Vec max_of(Vec a, Vec b) { return a < b ? b : a; }

#include "reduce/cpu/kernels.inc"

}  // namespace coll::reduce::portable
