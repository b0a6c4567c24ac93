// What the CPU kernels (reduce.cc) and the CUDA kernels (cuda/kernels.cu)
// share: the switch from a datatype to its element type, and the type an
// AVG divides in. Header-only and C++17, so that nvcc compiles it too.
#pragma once

#include "reduce/dtype.h"

#include <coll/coll.h>

#include <cstdint>
#include <type_traits>

namespace coll::reduce {

// Calls fn with a null pointer of the element type of `dtype`, a valid
// datatype (valid_datatype): the 16-bit floats as Half16 and BFloat16, the
// caller's storage types for them (the host's or CUDA's).
template <typename Half16, typename BFloat16, typename Fn>
decltype(auto) dispatch_dtype(coll_datatype_t dtype, Fn&& fn) {
  switch (dtype) {
    case COLL_INT8:
      return fn(static_cast<int8_t*>(nullptr));
    case COLL_UINT8:
      return fn(static_cast<uint8_t*>(nullptr));
    case COLL_INT32:
      return fn(static_cast<int32_t*>(nullptr));
    case COLL_UINT32:
      return fn(static_cast<uint32_t*>(nullptr));
    case COLL_INT64:
      return fn(static_cast<int64_t*>(nullptr));
    case COLL_UINT64:
      return fn(static_cast<uint64_t*>(nullptr));
    case COLL_FLOAT16:
      return fn(static_cast<Half16*>(nullptr));
    case COLL_BFLOAT16:
      return fn(static_cast<BFloat16*>(nullptr));
    case COLL_FLOAT32:
      return fn(static_cast<float*>(nullptr));
    default:
      return fn(static_cast<double*>(nullptr));
  }
}

// The type an AVG's integer elements are divided in: 64 bits, as the rank
// count need not fit in the element type (int8 and 200 ranks).
template <typename T>
using DivideIn =
    std::conditional_t<std::is_floating_point_v<T>, T, std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;

}  // namespace coll::reduce
