// The reduction kernels for AVX2 with F16C (8 float32 lanes); compiled with
// -mavx2 -mf16c and called only when the CPU has both (isa.cc).
//
// float16 converts with F16C, which rounds to nearest even like half.h and
// keeps NaN payloads the same way. bfloat16 widens by a shift; narrowing
// rounds in integer arithmetic (add 0x7fff plus the lowest kept bit) rather
// than with a conversion instruction, because AVX512_BF16's conversion
// flushes subnormals to zero and half.h does not.
#include "reduce/cpu/isa.h"

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

namespace coll::reduce::avx2 {

constexpr size_t kLanes = 8;
using Vec = __m256;

inline Vec load_f16(const uint16_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
inline void store_f16(uint16_t* p, Vec v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline Vec load_bf16(const uint16_t* p) {
  __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
inline void store_bf16(uint16_t* p, Vec v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i high = _mm256_srli_epi32(x, 16);
  const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd)), 16);
  const __m256i quiet_nan = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i magnitude = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i bits = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
  // Every lane is <= 0xffff, so unsigned saturation packs without changing it;
  // packus works per 128-bit half, and the permute joins the two halves.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline Vec min_of(Vec a, Vec b) { return _mm256_min_ps(b, a); }  // b < a ? b : a
inline Vec max_of(Vec a, Vec b) { return _mm256_max_ps(b, a); }  // b > a ? b : a

#include "reduce/cpu/kernels.inc"

}  // namespace coll::reduce::avx2
