// Element-wise reduction kernels for every datatype and op, and the single
// division that finishes COLL_AVG.
//
// Semantics (also the reference the tests compute against):
// - integer SUM and PROD wrap modulo 2^bits (computed unsigned), so any
//   reduction order gives the same bits;
// - float16 and bfloat16 are widened to float32 per element, combined, and
//   rounded back to nearest-even;
// - AVG reduces as SUM; divide() then divides once by the rank count
//   (integers truncate toward zero; float16/bfloat16 divide in float32).
#pragma once

#include "reduce/dtype.h"

#include <coll/coll.h>

#include <cstddef>

namespace coll::reduce {

// dst[i] = a[i] (op) b[i] for i < count. dst may alias a or b exactly. Runs
// the kernel of the widest instruction set the CPU has (isa.h).
void reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count);

// dst[i] /= divisor, once, at the end of an AVG.
void divide(coll_datatype_t dtype, void* dst, size_t count, int divisor);

}  // namespace coll::reduce
