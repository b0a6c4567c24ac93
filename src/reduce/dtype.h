// Facts about datatypes and ops: sizes and names. Header-only, so that
// programs linking only the C ABI (coll_perf) share them with the library.
#pragma once

#include <coll/coll.h>

#include <cstddef>

namespace coll::reduce {

inline bool valid_datatype(int dtype) { return dtype >= 0 && dtype < COLL_NUM_DATATYPES; }
inline bool valid_redop(int op) { return op >= 0 && op < COLL_NUM_REDOPS; }

// Bytes per element; 0 for a value outside the enum.
inline size_t datatype_size(coll_datatype_t dtype) {
  switch (dtype) {
    case COLL_INT8:
    case COLL_UINT8:
      return 1;
    case COLL_FLOAT16:
    case COLL_BFLOAT16:
      return 2;
    case COLL_INT32:
    case COLL_UINT32:
    case COLL_FLOAT32:
      return 4;
    case COLL_INT64:
    case COLL_UINT64:
    case COLL_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

// "float32", ...; "unknown" outside the enum.
inline const char* datatype_name(coll_datatype_t dtype) {
  static const char* const names[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                      "uint64", "float16", "bfloat16", "float32", "float64"};
  return valid_datatype(dtype) ? names[dtype] : "unknown";
}

// "sum", ...; "unknown" outside the enum.
inline const char* redop_name(coll_redop_t op) {
  static const char* const names[] = {"sum", "prod", "min", "max", "avg"};
  return valid_redop(op) ? names[op] : "unknown";
}

}  // namespace coll::reduce
