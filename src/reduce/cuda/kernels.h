// The CUDA reduction kernels' launchers (kernels.cu), callable from plain
// C++: no CUDA header here, so that backend.cc and the tests need none of
// nvcc. Each returns the cudaError_t of its launch (0 on success) and orders
// its work on `stream` (a cudaStream_t; null is the default stream), on the
// calling thread's current device.
#pragma once

#include <coll/coll.h>

#include <cstddef>

namespace coll::reduce::cuda {

// dst[i] = a[i] (op) b[i], with the semantics of reduce/reduce.h: integers
// wrap, float16 and bfloat16 are combined in float32 and rounded back to
// nearest-even, AVG reduces as SUM. dst may alias a or b exactly.
int launch_reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count,
                  void* stream);

// dst[i] /= divisor, once, at the end of an AVG (integers truncate toward
// zero; the 16-bit floats divide in float32).
int launch_divide(coll_datatype_t dtype, void* dst, size_t count, int divisor, void* stream);

// Loads every kernel above on the current device now. CUDA loads kernels
// lazily, at their first launch, and a load may wait for the whole context
// to be idle: a first launch while a caller's stream is held by coll's gate
// would wait for the operation it is part of. Called before any gate.
int load_kernels();

}  // namespace coll::reduce::cuda
