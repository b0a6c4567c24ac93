// Reduction kernels for every dtype and op against scalar references
// computed independently (wide integers, double, the compiler's _Float16).
#include "reduce/reduce.h"
#include "reduce/half.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace coll::reduce {
namespace {

template <typename T>
T int_reference(coll_redop_t op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case COLL_SUM:
    case COLL_AVG:
      return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)));
    case COLL_PROD:
      return static_cast<T>(static_cast<U>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
    case COLL_MIN:
      return std::min(a, b);
    default:
      return std::max(a, b);
  }
}

template <typename T>
void check_integer(coll_datatype_t t) {
  std::mt19937_64 rng(static_cast<uint64_t>(t) + 1);
  // Whole range: sums and products overflow and must wrap.
  const size_t n = 1031;
  std::vector<T> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<T>(rng());
    b[i] = static_cast<T>(rng());
  }
  for (coll_redop_t op : {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_AVG}) {
    reduce(t, op, out.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(out[i], int_reference(op, a[i], b[i])) << datatype_name(t) << " " << redop_name(op) << " " << i;
  }
}

TEST(Reduce, IntegersWrapAndCompare) {
  check_integer<int8_t>(COLL_INT8);
  check_integer<uint8_t>(COLL_UINT8);
  check_integer<int32_t>(COLL_INT32);
  check_integer<uint32_t>(COLL_UINT32);
  check_integer<int64_t>(COLL_INT64);
  check_integer<uint64_t>(COLL_UINT64);
}

template <typename T>
void check_float(coll_datatype_t t) {
  std::mt19937 rng(static_cast<unsigned>(t));
  std::uniform_real_distribution<double> dist(-1000, 1000);
  const size_t n = 1031;
  std::vector<T> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = static_cast<T>(dist(rng));
    b[i] = static_cast<T>(dist(rng));
  }
  for (coll_redop_t op : {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_AVG}) {
    reduce(t, op, out.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) {
      // One correctly rounded operation: computing in double and rounding once is exact here.
      double x = a[i], y = b[i];
      T want = op == COLL_PROD  ? static_cast<T>(x * y)
               : op == COLL_MIN ? static_cast<T>(std::min(x, y))
               : op == COLL_MAX ? static_cast<T>(std::max(x, y))
                                : static_cast<T>(x + y);
      ASSERT_EQ(out[i], want) << datatype_name(t) << " " << redop_name(op) << " " << i;
    }
  }
}

TEST(Reduce, Float32AndFloat64) {
  check_float<float>(COLL_FLOAT32);
  check_float<double>(COLL_FLOAT64);
}

// 16-bit floats: widened to float32, combined once, rounded to nearest even.
void check_16bit(coll_datatype_t t, float (*widen)(uint16_t), uint16_t (*narrow)(float)) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-200, 200);
  const size_t n = 1031;
  std::vector<uint16_t> a(n), b(n), out(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = narrow(dist(rng));
    b[i] = narrow(dist(rng));
  }
  for (coll_redop_t op : {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_AVG}) {
    reduce(t, op, out.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i) {
      double x = widen(a[i]), y = widen(b[i]);
      // Products and sums of two 16-bit floats are exact in double, so one rounding suffices.
      double exact = op == COLL_PROD  ? x * y
                     : op == COLL_MIN ? std::min(x, y)
                     : op == COLL_MAX ? std::max(x, y)
                                      : x + y;
      ASSERT_EQ(out[i], narrow(static_cast<float>(exact))) << datatype_name(t) << " " << redop_name(op) << " " << i;
    }
  }
}

TEST(Reduce, Float16AndBFloat16AccumulateInFloat32) {
  check_16bit(COLL_FLOAT16, half_to_float, float_to_half);
  check_16bit(COLL_BFLOAT16, bfloat16_to_float, float_to_bfloat16);
#ifdef __FLT16_MAX__
  // And against the compiler's own half arithmetic for sums.
  _Float16 x = static_cast<_Float16>(1.5f), y = static_cast<_Float16>(2049.0f);
  uint16_t a = std::bit_cast<uint16_t>(x), b = std::bit_cast<uint16_t>(y), out = 0;
  reduce(COLL_FLOAT16, COLL_SUM, &out, &a, &b, 1);
  EXPECT_EQ(out, std::bit_cast<uint16_t>(static_cast<_Float16>(static_cast<float>(x) + static_cast<float>(y))));
#endif
}

TEST(Reduce, InPlaceAliasingAndZeroCount) {
  std::vector<int32_t> a = {1, 2, 3}, b = {10, 20, 30};
  reduce(COLL_INT32, COLL_SUM, a.data(), a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<int32_t>{11, 22, 33}));
  reduce(COLL_INT32, COLL_SUM, b.data(), a.data(), b.data(), 0);
  EXPECT_EQ(b, (std::vector<int32_t>{10, 20, 30}));
}

TEST(Reduce, DivideTruncatesIntegersAndRoundsFloatsOnce) {
  std::vector<int32_t> i = {-7, 7, 8};
  divide(COLL_INT32, i.data(), 3, 2);
  EXPECT_EQ(i, (std::vector<int32_t>{-3, 3, 4}));
  std::vector<float> f = {10.0f, 1.0f};
  divide(COLL_FLOAT32, f.data(), 2, 3);
  EXPECT_EQ(f[0], 10.0f / 3.0f);
  EXPECT_EQ(f[1], 1.0f / 3.0f);
  uint16_t h = float_to_half(10.0f);
  divide(COLL_FLOAT16, &h, 1, 3);
  EXPECT_EQ(h, float_to_half(10.0f / 3.0f));
}

TEST(Reduce, NamesAndSizes) {
  EXPECT_EQ(datatype_size(COLL_BFLOAT16), 2u);
  EXPECT_EQ(datatype_size(COLL_FLOAT64), 8u);
  EXPECT_EQ(datatype_size(static_cast<coll_datatype_t>(99)), 0u);
  EXPECT_STREQ(datatype_name(COLL_UINT32), "uint32");
  EXPECT_STREQ(redop_name(COLL_AVG), "avg");
  EXPECT_FALSE(valid_redop(COLL_NUM_REDOPS));
  EXPECT_FALSE(valid_datatype(-1));
}

}  // namespace
}  // namespace coll::reduce
