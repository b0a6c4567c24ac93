// Copies whose stores bypass the caches (non-temporal stores).
//
// An ordinary store first reads its cache line from memory (read for
// ownership), so writing S bytes that are not cached moves 2S through
// memory; a non-temporal store writes whole lines and moves S. Where an
// allreduce is limited by memory traffic (buffers far larger than the
// caches, docs/PERFORMANCE.md) and what it writes is not read again soon,
// that is a third of its traffic.
#pragma once

#include <cstddef>

namespace coll::reduce {

// memcpy(dst, src, bytes) with non-temporal stores where the CPU has them
// (x86-64), else memcpy. They are weakly ordered: call stream_fence() before
// another rank may look at dst.
void stream_copy(void* dst, const void* src, size_t bytes);

// Orders every stream_copy before it ahead of the stores after it.
void stream_fence();

}  // namespace coll::reduce
