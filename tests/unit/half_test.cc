// float16 / bfloat16 conversions against independent references: the
// compiler's _Float16 where it has one, and a nearest-even search in double.
#include "reduce/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>

namespace coll::reduce {
namespace {

bool is_nan_half(uint16_t h) { return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0; }

TEST(Half, EveryHalfSurvivesARoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float f = half_to_float(bits);
    if (is_nan_half(bits)) {
      EXPECT_TRUE(std::isnan(f));
      EXPECT_TRUE(is_nan_half(float_to_half(f)));
    } else {
      ASSERT_EQ(float_to_half(f), bits) << std::hex << h;
    }
  }
}

// Nearest-even reference: the two neighbouring halves, compared in double.
uint16_t reference_half(float f) {
  double x = f;
  double ax = std::fabs(x);
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (ax >= 65520.0) return sign | 0x7c00;
  // Largest half magnitude <= ax, by search over the ordered bit patterns.
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (half_to_float(mid) <= ax)
      lo = mid;
    else
      hi = static_cast<uint16_t>(mid - 1);
  }
  uint16_t below = lo, above = static_cast<uint16_t>(lo + 1);
  double d_below = ax - half_to_float(below), d_above = half_to_float(above) - ax;
  uint16_t pick = d_below < d_above ? below : d_above < d_below ? above : ((below & 1) ? above : below);
  return sign | pick;
}

TEST(Half, FloatToHalfRoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> wide(-70000.f, 70000.f), narrow(-1e-4f, 1e-4f);
  for (int i = 0; i < 200000; ++i) {
    float f = i % 2 ? wide(rng) : narrow(rng);
    ASSERT_EQ(float_to_half(f), reference_half(f)) << f;
  }
  // Ties: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 and goes to the even one.
  EXPECT_EQ(float_to_half(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(float_to_half(65504.f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.f), 0x7c00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_half(0x1p-25f), 0x0000);  // a tie with zero, which is even
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
}

#ifdef __FLT16_MAX__
TEST(Half, AgreesWithTheCompilersFloat16) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 500000; ++i) {
    float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f)) continue;
    _Float16 h = static_cast<_Float16>(f);
    ASSERT_EQ(float_to_half(f), std::bit_cast<uint16_t>(h)) << f;
  }
}
#endif

uint16_t reference_bfloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t down = static_cast<uint16_t>(x >> 16);
  uint16_t up = static_cast<uint16_t>(down + 1);
  double d_down = std::fabs(static_cast<double>(f) - bfloat16_to_float(down));
  double d_up = std::fabs(static_cast<double>(bfloat16_to_float(up)) - f);
  if ((x & 0xffff) == 0) return down;
  return d_down < d_up ? down : d_up < d_down ? up : ((down & 1) ? up : down);
}

TEST(BFloat16, FloatToBFloat16RoundsToNearestEven) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 500000; ++i) {
    float f = std::bit_cast<float>(bits(rng));
    if (std::isnan(f) || std::isinf(f) || std::fabs(f) > 3.3e38f) continue;
    ASSERT_EQ(float_to_bfloat16(f), reference_bfloat16(f)) << f;
  }
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
  EXPECT_EQ(float_to_bfloat16(INFINITY), 0x7f80);
}

}  // namespace
}  // namespace coll::reduce
