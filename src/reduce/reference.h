// Inputs whose reduction is exact whatever the order, and the expected
// result computed independently of the library: used by the tests and by
// coll_perf's #wrong column. Header-only so that programs linking only the
// C ABI can use it.
//
// Why the result is order-independent:
// - SUM/AVG: small integers (|x| <= 2 per rank, at most 8 * 2 = 16 in the
//   sum for the usual rank counts, 2 * nranks in general) are exact in every
//   type, so every partial sum is exact; integer wrap-around is modular.
// - PROD: factors are 1, 2 and (signed types) -1, so every partial product is
//   a signed power of two: exact in every float type while |p| <= 2^(nranks)
//   stays in range; integers wrap modulo 2^bits, which is order-independent.
// - MIN/MAX: exact by nature.
// - AVG divides the exact sum once, as the library does.
#pragma once

#include "reduce/dtype.h"
#include "reduce/half.h"

#include <coll/coll.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace coll::reference {

inline bool is_signed_type(coll_datatype_t t) {
  return t == COLL_INT8 || t == COLL_INT32 || t == COLL_INT64 || t == COLL_FLOAT16 || t == COLL_BFLOAT16 ||
         t == COLL_FLOAT32 || t == COLL_FLOAT64;
}

// Rank `rank`'s input at element i, as an integer.
inline int64_t input_value(coll_datatype_t t, coll_redop_t op, int rank, size_t i) {
  const int64_t k = static_cast<int64_t>((i * 7 + static_cast<size_t>(rank) * 13) % 5);  // 0..4
  switch (op) {
    case COLL_PROD:
      if (is_signed_type(t) && (i + static_cast<size_t>(rank)) % 7 == 3) return -1;
      return k == 0 ? 2 : 1;
    case COLL_MIN:
    case COLL_MAX:
      return is_signed_type(t) ? static_cast<int64_t>((i * 3 + static_cast<size_t>(rank) * 5) % 11) - 5
                               : static_cast<int64_t>((i * 3 + static_cast<size_t>(rank) * 5) % 11);
    default:
      return is_signed_type(t) ? k - 2 : k;
  }
}

// Writes integer v into element i of buf, in type t.
inline void store(coll_datatype_t t, void* buf, size_t i, int64_t v) {
  switch (t) {
    case COLL_INT8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case COLL_UINT8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case COLL_INT32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case COLL_UINT32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case COLL_INT64:
      static_cast<int64_t*>(buf)[i] = v;
      break;
    case COLL_UINT64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
    case COLL_FLOAT16:
      static_cast<uint16_t*>(buf)[i] = reduce::float_to_half(static_cast<float>(v));
      break;
    case COLL_BFLOAT16:
      static_cast<uint16_t*>(buf)[i] = reduce::float_to_bfloat16(static_cast<float>(v));
      break;
    case COLL_FLOAT32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case COLL_FLOAT64:
      static_cast<double*>(buf)[i] = static_cast<double>(v);
      break;
    default:
      break;
  }
}

inline void fill_input(coll_datatype_t t, coll_redop_t op, int rank, size_t count, void* buf) {
  for (size_t i = 0; i < count; ++i) store(t, buf, i, input_value(t, op, rank, i));
}

// The exact result at element i over nranks ranks, written into `out` (one element).
inline void expected_element(coll_datatype_t t, coll_redop_t op, int nranks, size_t i, void* out) {
  // Integer types: reduce in uint64 (wraps like the library), then truncate.
  uint64_t acc = 0;
  int64_t lo = 0, hi = 0;
  for (int r = 0; r < nranks; ++r) {
    int64_t v = input_value(t, op, r, i);
    if (r == 0) {
      acc = static_cast<uint64_t>(v);
      lo = hi = v;
      continue;
    }
    if (op == COLL_PROD)
      acc *= static_cast<uint64_t>(v);
    else
      acc += static_cast<uint64_t>(v);
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  int64_t exact = op == COLL_MIN ? lo : op == COLL_MAX ? hi : static_cast<int64_t>(acc);
  if (op != COLL_AVG) {
    store(t, out, 0, exact);
    return;
  }
  // AVG: one division of the exact sum, in the type's own arithmetic.
  switch (t) {
    case COLL_INT8:
      *static_cast<int8_t*>(out) = static_cast<int8_t>(static_cast<int8_t>(exact) / nranks);
      break;
    case COLL_UINT8:
      *static_cast<uint8_t*>(out) = static_cast<uint8_t>(static_cast<uint8_t>(exact) / nranks);
      break;
    case COLL_INT32:
      *static_cast<int32_t*>(out) = static_cast<int32_t>(exact) / nranks;
      break;
    case COLL_UINT32:
      *static_cast<uint32_t*>(out) = static_cast<uint32_t>(exact) / static_cast<uint32_t>(nranks);
      break;
    case COLL_INT64:
      *static_cast<int64_t*>(out) = exact / nranks;
      break;
    case COLL_UINT64:
      *static_cast<uint64_t*>(out) = static_cast<uint64_t>(exact) / static_cast<uint64_t>(nranks);
      break;
    case COLL_FLOAT16:
      *static_cast<uint16_t*>(out) = reduce::float_to_half(static_cast<float>(exact) / static_cast<float>(nranks));
      break;
    case COLL_BFLOAT16:
      *static_cast<uint16_t*>(out) = reduce::float_to_bfloat16(static_cast<float>(exact) / static_cast<float>(nranks));
      break;
    case COLL_FLOAT32:
      *static_cast<float*>(out) = static_cast<float>(exact) / static_cast<float>(nranks);
      break;
    case COLL_FLOAT64:
      *static_cast<double*>(out) = static_cast<double>(exact) / nranks;
      break;
    default:
      break;
  }
}

// How many elements of `result` differ (bit for bit) from the exact result.
inline size_t count_wrong(coll_datatype_t t, coll_redop_t op, int nranks, size_t count, const void* result) {
  const size_t es = reduce::datatype_size(t);
  const auto* bytes = static_cast<const unsigned char*>(result);
  size_t wrong = 0;
  unsigned char expected[8];
  for (size_t i = 0; i < count; ++i) {
    expected_element(t, op, nranks, i, expected);
    if (std::memcmp(expected, bytes + i * es, es) != 0) ++wrong;
  }
  return wrong;
}

}  // namespace coll::reference
