// IEEE binary16 (float16) and bfloat16 as storage types, with conversions to
// and from float32. Arithmetic happens in float32; results are rounded back
// to nearest, ties to even. NaN stays NaN (quiet), infinities stay infinite,
// float16 subnormals are exact.
#pragma once

#include <bit>
#include <cstdint>

namespace coll::reduce {

inline float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in float
    float v = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

inline uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u)  // infinity or NaN (kept quiet, top payload bits kept)
    return static_cast<uint16_t>(sign | (a > 0x7f800000u ? 0x7e00 | ((a >> 13) & 0x3ff) : 0x7c00));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00);  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {
    // Below 2^-14: the result is a subnormal (or the least normal). Adding 0.5
    // puts the value's 2^-24 multiples in float's last mantissa bits, and the
    // FPU's own round-to-nearest-even does the rounding.
    float r = std::bit_cast<float>(a) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(r) - 0x3f000000u));
  }
  // Normal: re-bias the exponent (127 -> 15) and round away 13 bits, ties to even.
  uint32_t odd = (a >> 13) & 1;
  a += 0xc8000fffu + odd;
  return static_cast<uint16_t>(sign | (a >> 13));
}

inline float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

inline uint16_t float_to_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace coll::reduce
