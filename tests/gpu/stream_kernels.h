// Launchers of the stream-ordering test's kernels (stream_kernels.cu).
#pragma once

#include <cstddef>

namespace coll::testing {

// x[i] = value + i % 7, after one thread spun for `spin_cycles` clocks.
int launch_slow_fill(void* stream, float* x, size_t n, float value, long long spin_cycles);
// dst[i] = src[i].
int launch_copy_out(void* stream, float* dst, const float* src, size_t n);

}  // namespace coll::testing
