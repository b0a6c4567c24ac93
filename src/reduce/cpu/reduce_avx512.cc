// The reduction kernels for AVX-512 (16 float32 lanes); compiled with
// -mavx512f -mavx512bw -mavx512vl and called only when the CPU has them
// (isa.cc). The conversions follow reduce_avx2.cc, twice as wide.
#include "reduce/cpu/isa.h"

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

namespace coll::reduce::avx512 {

constexpr size_t kLanes = 16;
using Vec = __m512;

inline Vec load_f16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline void store_f16(uint16_t* p, Vec v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
inline Vec load_bf16(const uint16_t* p) {
  __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
inline void store_bf16(uint16_t* p, Vec v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(x, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(x, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), odd)), 16);
  const __m512i quiet_nan = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  const __m512i magnitude = _mm512_and_si512(x, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __m512i bits = _mm512_mask_blend_epi32(is_nan, rounded, quiet_nan);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bits));
}
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline Vec min_of(Vec a, Vec b) { return _mm512_min_ps(b, a); }  // b < a ? b : a
inline Vec max_of(Vec a, Vec b) { return _mm512_max_ps(b, a); }  // b > a ? b : a

#include "reduce/cpu/kernels.inc"

}  // namespace coll::reduce::avx512
