// Launchers of the stream-ordering test's kernels (stream_kernels.cu).
#pragma once

#include <cstddef>

namespace coll::testing {

// x[i] = value + i % 7, after one thread spun for `spin_cycles` clocks.
int launch_slow_fill(void* stream, float* x, size_t n, float value, long long spin_cycles);
// dst[i] = src[i].
int launch_copy_out(void* stream, float* dst, const float* src, size_t n);
// Loads both kernels now: under lazy loading a kernel's first launch waits
// for the context to go idle, which a stream held by coll is not.
int load_stream_kernels();

}  // namespace coll::testing
