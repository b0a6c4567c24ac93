// Reduction kernels for every dtype and op against scalar references
// computed independently (wide integers, double, the compiler's _Float16),
// once per instruction set this CPU has (portable, AVX2, AVX-512).
#include "reduce/reduce.h"
#include "base/error.h"
#include "reduce/backend.h"
#include "reduce/cpu/isa.h"
#include "reduce/half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
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
void check_integer(ReduceFn reduce, coll_datatype_t t) {
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

// Each test runs once per instruction set; those this CPU lacks are skipped.
class Kernel : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_supported(GetParam())) GTEST_SKIP() << "this CPU or build has no " << isa_name(GetParam());
    kernel = reduce_kernel(GetParam());
  }
  ReduceFn kernel = nullptr;
};
INSTANTIATE_TEST_SUITE_P(Isas, Kernel, ::testing::ValuesIn(kAllIsas),
                         [](const ::testing::TestParamInfo<Isa>& info) { return std::string(isa_name(info.param)); });

TEST_P(Kernel, IntegersWrapAndCompare) {
  check_integer<int8_t>(kernel, COLL_INT8);
  check_integer<uint8_t>(kernel, COLL_UINT8);
  check_integer<int32_t>(kernel, COLL_INT32);
  check_integer<uint32_t>(kernel, COLL_UINT32);
  check_integer<int64_t>(kernel, COLL_INT64);
  check_integer<uint64_t>(kernel, COLL_UINT64);
}

template <typename T>
void check_float(ReduceFn reduce, coll_datatype_t t) {
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

TEST_P(Kernel, Float32AndFloat64) {
  check_float<float>(kernel, COLL_FLOAT32);
  check_float<double>(kernel, COLL_FLOAT64);
}

// 16-bit floats: widened to float32, combined once, rounded to nearest even.
void check_16bit(ReduceFn reduce, coll_datatype_t t, float (*widen)(uint16_t), uint16_t (*narrow)(float)) {
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

TEST_P(Kernel, Float16AndBFloat16AccumulateInFloat32) {
  check_16bit(kernel, COLL_FLOAT16, half_to_float, float_to_half);
  check_16bit(kernel, COLL_BFLOAT16, bfloat16_to_float, float_to_bfloat16);
#ifdef __FLT16_MAX__
  // And against the compiler's own half arithmetic for sums.
  _Float16 x = static_cast<_Float16>(1.5f), y = static_cast<_Float16>(2049.0f);
  uint16_t a = std::bit_cast<uint16_t>(x), b = std::bit_cast<uint16_t>(y), out = 0;
  kernel(COLL_FLOAT16, COLL_SUM, &out, &a, &b, 1);
  EXPECT_EQ(out, std::bit_cast<uint16_t>(static_cast<_Float16>(static_cast<float>(x) + static_cast<float>(y))));
#endif
}

TEST_P(Kernel, InPlaceAliasingAndZeroCount) {
  std::vector<int32_t> a = {1, 2, 3}, b = {10, 20, 30};
  kernel(COLL_INT32, COLL_SUM, a.data(), a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<int32_t>{11, 22, 33}));
  kernel(COLL_INT32, COLL_SUM, b.data(), b.data(), a.data(), 3);
  EXPECT_EQ(b, (std::vector<int32_t>{21, 42, 63}));
  kernel(COLL_INT32, COLL_SUM, b.data(), a.data(), b.data(), 0);
  EXPECT_EQ(b, (std::vector<int32_t>{21, 42, 63}));
  std::vector<uint16_t> h = {float_to_half(1.5f), float_to_half(2.0f)};
  kernel(COLL_FLOAT16, COLL_SUM, h.data(), h.data(), h.data(), 2);
  EXPECT_EQ(h, (std::vector<uint16_t>{float_to_half(3.0f), float_to_half(4.0f)}));
}

// Every length around the vector widths (8 and 16 lanes, 32 and 64 bytes),
// at unaligned starts, for every dtype and op: the same bits as the portable
// kernel, and nothing written past the end.
TEST_P(Kernel, EveryLengthAndAlignmentMatchesPortable) {
  std::mt19937 rng(11);
  const size_t max_n = 70, guard = 16;
  for (int dt = 0; dt < COLL_NUM_DATATYPES; ++dt) {
    auto t = static_cast<coll_datatype_t>(dt);
    const size_t es = datatype_size(t);
    std::vector<unsigned char> a((max_n + 1) * es), b((max_n + 1) * es);
    for (auto& byte : a) byte = static_cast<unsigned char>(rng());
    for (auto& byte : b) byte = static_cast<unsigned char>(rng());
    if (es == 2 || es >= 4) {  // keep floats finite: clear the top exponent bit of every element
      for (size_t i = 0; i + es <= a.size(); i += es) a[i + es - 1] &= 0x3f, b[i + es - 1] &= 0x3f;
    }
    for (int op = 0; op < COLL_NUM_REDOPS; ++op)
      for (size_t offset : {size_t{0}, size_t{1}})
        for (size_t n = 0; n + offset <= max_n; ++n) {
          std::vector<unsigned char> want((n + guard) * es, 0xa5), got((n + guard) * es, 0xa5);
          const void* x = a.data() + offset * es;
          const void* y = b.data() + offset * es;
          reduce_kernel(Isa::kPortable)(t, static_cast<coll_redop_t>(op), want.data(), x, y, n);
          kernel(t, static_cast<coll_redop_t>(op), got.data(), x, y, n);
          ASSERT_EQ(got, want) << datatype_name(t) << " " << redop_name(static_cast<coll_redop_t>(op)) << " n=" << n
                               << " offset=" << offset;
        }
  }
}

// Every float16 and bfloat16 bit pattern (NaN, infinity, subnormals,
// overflow to infinity) against a set of partners, through the scalar
// conversions of half.h. A NaN must come out as a NaN; which payload IEEE
// leaves open.
TEST_P(Kernel, Every16BitPatternRoundsLikeHalfH) {
  struct Kind {
    coll_datatype_t t;
    float (*widen)(uint16_t);
    uint16_t (*narrow)(float);
  };
  const uint16_t partners[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x7bff, 0x7c00,
                               0xfc00, 0x7e00, 0x3f80, 0x7f7f, 0x7f80, 0xff80, 0x7fc0, 0x0080, 0x1234};
  for (Kind k :
       {Kind{COLL_FLOAT16, half_to_float, float_to_half}, Kind{COLL_BFLOAT16, bfloat16_to_float, float_to_bfloat16}}) {
    std::vector<uint16_t> a(65536), b(65536), out(65536);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(i);
    for (uint16_t partner : partners) {
      std::fill(b.begin(), b.end(), partner);
      for (coll_redop_t op : {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX}) {
        kernel(k.t, op, out.data(), a.data(), b.data(), a.size());
        for (size_t i = 0; i < a.size(); ++i) {
          float x = k.widen(a[i]), y = k.widen(partner);
          float r = op == COLL_SUM    ? x + y
                    : op == COLL_PROD ? x * y
                    : op == COLL_MIN  ? (y < x ? y : x)
                                      : (x < y ? y : x);
          uint16_t want = k.narrow(r);
          bool want_nan = std::isnan(k.widen(want));
          if (want_nan ? !std::isnan(k.widen(out[i])) : out[i] != want)
            FAIL() << datatype_name(k.t) << " " << redop_name(op) << " a=0x" << std::hex << a[i] << " b=0x" << partner
                   << ": got 0x" << out[i] << ", want 0x" << want;
        }
      }
    }
  }
}

TEST(Reduce, ChoosesTheWidestSupportedIsa) {
  Isa best = best_isa();
  EXPECT_TRUE(isa_supported(best));
  EXPECT_TRUE(isa_supported(Isa::kPortable));
  for (Isa isa : kAllIsas)
    if (isa_supported(isa)) EXPECT_GE(static_cast<int>(best), static_cast<int>(isa)) << isa_name(isa);
  EXPECT_EQ(active_isa(), best);  // COLL_REDUCE_ISA is not set in this test
}

TEST(Reduce, DivideTruncatesIntegersAndRoundsFloatsOnce) {
  std::vector<int32_t> i = {-7, 7, 8};
  divide(COLL_INT32, i.data(), 3, 2);
  EXPECT_EQ(i, (std::vector<int32_t>{-3, 3, 4}));
  std::vector<float> f = {10.0f, 1.0f};
  divide(COLL_FLOAT32, f.data(), 2, 3);
  EXPECT_EQ(f[0], 10.0f / 3.0f);
  EXPECT_EQ(f[1], 1.0f / 3.0f);
  // More ranks than an 8-bit type holds: no wrap of the divisor, no division by zero.
  std::vector<int8_t> i8 = {-100, 127};
  divide(COLL_INT8, i8.data(), 2, 200);
  EXPECT_EQ(i8, (std::vector<int8_t>{0, 0}));
  std::vector<uint8_t> u8 = {255, 200};
  divide(COLL_UINT8, u8.data(), 2, 256);
  EXPECT_EQ(u8, (std::vector<uint8_t>{0, 0}));
  std::vector<uint8_t> u8b = {255};
  divide(COLL_UINT8, u8b.data(), 1, 200);
  EXPECT_EQ(u8b[0], 1);
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

// Host buffers get the CPU kernels; a build without CUDA refuses CUDA
// buffers with a message instead of touching device pointers, a CUDA build
// has the cuda backend.
TEST(Reduce, BackendByMemoryKind) {
  const Backend& cpu = backend_for(MemoryKind::kHost);
  EXPECT_STREQ(cpu.name, "cpu");
  float a[3] = {1, 2, 3}, b[3] = {4, 5, 6}, out[3];
  cpu.reduce(COLL_FLOAT32, COLL_SUM, out, a, b, 3, nullptr);
  cpu.divide(COLL_FLOAT32, out, 3, 5, nullptr);
  cpu.copy(a, out, sizeof out, nullptr);
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[2], 9.0f / 5.0f);
#ifdef COLL_WITH_CUDA
  // Its kernels run in tests/gpu, on a machine with a GPU.
  EXPECT_STREQ(backend_for(MemoryKind::kCuda).name, "cuda");
#else
  try {
    backend_for(MemoryKind::kCuda);
    FAIL() << "a CUDA backend in a build without one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no cuda backend"), std::string::npos) << e.what();
  }
#endif
}

}  // namespace
}  // namespace coll::reduce
