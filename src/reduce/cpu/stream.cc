#include "reduce/cpu/stream.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace coll::reduce {

void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  // Non-temporal stores want an aligned destination: the ragged head and
  // tail go the ordinary way, whole 64-byte lines in between. SSE2 is part
  // of x86-64, and a line written in four 16-byte stores still leaves the
  // write-combining buffer whole.
  const size_t head = std::min(bytes, (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (; bytes >= 64; d += 64, s += 64, bytes -= 64) {
    const __m128i x0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
    const __m128i x1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
    const __m128i x2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 32));
    const __m128i x3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d), x0);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 16), x1);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 32), x2);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + 48), x3);
  }
  std::memcpy(d, s, bytes);
#else
  std::memcpy(dst, src, bytes);
#endif
}

void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace coll::reduce
