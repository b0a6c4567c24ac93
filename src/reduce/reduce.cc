#include "reduce/reduce.h"

#include "base/error.h"
#include "reduce/cpu/isa.h"
#include "reduce/dispatch.h"
#include "reduce/half.h"

#include <cstdint>
#include <type_traits>

namespace coll::reduce {
namespace {

// Storage types for the two 16-bit floats, so that templates can tell them apart.
struct Half {
  uint16_t bits;
};
struct BFloat {
  uint16_t bits;
};

template <typename T>
float widen(T v);
template <>
float widen(Half v) {
  return half_to_float(v.bits);
}
template <>
float widen(BFloat v) {
  return bfloat16_to_float(v.bits);
}
template <typename T>
T narrow(float f);
template <>
Half narrow(float f) {
  return Half{float_to_half(f)};
}
template <>
BFloat narrow(float f) {
  return BFloat{float_to_bfloat16(f)};
}

template <typename T>
constexpr bool kIsHalfLike = std::is_same_v<T, Half> || std::is_same_v<T, BFloat>;

template <typename T>
void divide_typed(T* dst, size_t n, int divisor) {
  if constexpr (kIsHalfLike<T>) {
    for (size_t i = 0; i < n; ++i) dst[i] = narrow<T>(widen(dst[i]) / static_cast<float>(divisor));
  } else {
    for (size_t i = 0; i < n; ++i)
      dst[i] = static_cast<T>(static_cast<DivideIn<T>>(dst[i]) / static_cast<DivideIn<T>>(divisor));
  }
}

}  // namespace

void reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count) {
  if (!valid_datatype(dtype)) fail(Code::kInvalidArgument, "datatype: unknown value ", static_cast<int>(dtype));
  static const ReduceFn kernel = reduce_kernel(active_isa());
  kernel(dtype, op, dst, a, b, count);
}

void divide(coll_datatype_t dtype, void* dst, size_t count, int divisor) {
  if (!valid_datatype(dtype)) fail(Code::kInvalidArgument, "datatype: unknown value ", static_cast<int>(dtype));
  dispatch_dtype<Half, BFloat>(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    divide_typed<T>(static_cast<T*>(dst), count, divisor);
  });
}

}  // namespace coll::reduce
