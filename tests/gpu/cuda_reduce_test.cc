// The cuda backend's kernels (src/reduce/cuda) against the portable CPU
// kernel, which tests/unit/reduce_test.cc checks against the reference: the
// same bits for every datatype and op, every length around the vector width
// at aligned and unaligned starts, large and prime counts, in place, and
// nothing written past the end. Needs a GPU: skips with a message without
// one (bench/gpu/device_check.sh runs these on a GPU machine).
#include "reduce/backend.h"
#include "reduce/cpu/isa.h"
#include "reduce/dtype.h"
#include "reduce/half.h"
#include "reduce/reduce.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace coll::reduce {
namespace {

using Bytes = std::vector<unsigned char>;

class CudaReduce : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0)
      GTEST_SKIP() << "no CUDA device here (" << cudaGetErrorName(e)
                   << "): the gpu tests run on a GPU machine, through bench/gpu/device_check.sh";
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : device_) cudaFree(p);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // A device copy of `host`, freed at the end of the test.
  unsigned char* on_device(const Bytes& host) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, host.size() + 16), cudaSuccess);
    device_.push_back(p);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    return static_cast<unsigned char*>(p);
  }
  Bytes to_host(const unsigned char* p, size_t bytes) {
    Bytes out(bytes);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
  const Backend& gpu() { return backend_for(MemoryKind::kCuda); }
  cudaStream_t stream_ = nullptr;
  std::vector<void*> device_;
};

// Random bytes with every element finite (the top exponent bit cleared).
Bytes random_elements(std::mt19937& rng, size_t n, size_t es) {
  Bytes b(n * es);
  for (auto& byte : b) byte = static_cast<unsigned char>(rng());
  if (es >= 2)
    for (size_t i = 0; i + es <= b.size(); i += es) b[i + es - 1] &= 0x3f;
  return b;
}

TEST_F(CudaReduce, EveryLengthAndAlignmentMatchesTheCpu) {
  std::mt19937 rng(5);
  const size_t max_n = 80, guard = 16;
  for (int dt = 0; dt < COLL_NUM_DATATYPES; ++dt) {
    auto t = static_cast<coll_datatype_t>(dt);
    const size_t es = datatype_size(t);
    Bytes a = random_elements(rng, max_n + 1, es), b = random_elements(rng, max_n + 1, es);
    unsigned char *da = on_device(a), *db = on_device(b);
    for (int o = 0; o < COLL_NUM_REDOPS; ++o) {
      auto op = static_cast<coll_redop_t>(o);
      for (size_t offset : {size_t{0}, size_t{1}})
        for (size_t n = 0; n + offset <= max_n; ++n) {
          Bytes want((n + guard) * es, 0xa5), fill((n + guard) * es, 0xa5);
          reduce_kernel(Isa::kPortable)(t, op, want.data(), a.data() + offset * es, b.data() + offset * es, n);
          unsigned char* out = on_device(fill);
          gpu().reduce(t, op, out, da + offset * es, db + offset * es, n, stream_);
          ASSERT_EQ(to_host(out, want.size()), want)
              << datatype_name(t) << " " << redop_name(op) << " n=" << n << " offset=" << offset;
        }
    }
  }
}

// Counts far past one block's worth, primes among them, in place (dst is a).
TEST_F(CudaReduce, LargeAndPrimeCountsInPlace) {
  std::mt19937 rng(7);
  for (size_t n : {size_t{65537}, size_t{1000003}, size_t{(1u << 24) + 5}})
    for (coll_datatype_t t : {COLL_INT8, COLL_BFLOAT16, COLL_FLOAT32, COLL_UINT64})
      for (coll_redop_t op : {COLL_SUM, COLL_MAX}) {
        const size_t es = datatype_size(t);
        Bytes a = random_elements(rng, n, es), b = random_elements(rng, n, es), want(n * es);
        reduce_kernel(Isa::kPortable)(t, op, want.data(), a.data(), b.data(), n);
        unsigned char *da = on_device(a), *db = on_device(b);
        gpu().reduce(t, op, da, da, db, n, stream_);
        ASSERT_EQ(to_host(da, want.size()), want) << datatype_name(t) << " " << redop_name(op) << " n=" << n;
      }
}

// AVG's one division: as the CPU's, every datatype.
TEST_F(CudaReduce, DivideAsTheCpu) {
  std::mt19937 rng(9);
  for (int dt = 0; dt < COLL_NUM_DATATYPES; ++dt) {
    auto t = static_cast<coll_datatype_t>(dt);
    const size_t es = datatype_size(t), n = 4099;
    Bytes x = random_elements(rng, n, es), want = x;
    for (int divisor : {2, 3, 7}) {
      want = x;
      divide(t, want.data(), n, divisor);
      unsigned char* d = on_device(x);
      gpu().divide(t, d, n, divisor, stream_);
      ASSERT_EQ(to_host(d, want.size()), want) << datatype_name(t) << " / " << divisor;
    }
  }
}

// Every float16 and bfloat16 bit pattern against a few partners: the same
// rounding as the CPU (NaN only as NaN: IEEE leaves the payload open).
TEST_F(CudaReduce, Every16BitPatternAsTheCpu) {
  struct Kind {
    coll_datatype_t t;
    float (*widen)(uint16_t);
  };
  const uint16_t partners[] = {0x0000, 0x8000, 0x0001, 0x3c00, 0x7bff, 0x7c00, 0x7e00, 0x7f80, 0x1234};
  for (Kind k : {Kind{COLL_FLOAT16, half_to_float}, Kind{COLL_BFLOAT16, bfloat16_to_float}}) {
    std::vector<uint16_t> a(65536), b(65536), want(65536);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint16_t>(i);
    for (uint16_t partner : partners)
      for (coll_redop_t op : {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX}) {
        std::fill(b.begin(), b.end(), partner);
        reduce_kernel(Isa::kPortable)(k.t, op, want.data(), a.data(), b.data(), a.size());
        Bytes ha(reinterpret_cast<unsigned char*>(a.data()), reinterpret_cast<unsigned char*>(a.data() + a.size()));
        Bytes hb(reinterpret_cast<unsigned char*>(b.data()), reinterpret_cast<unsigned char*>(b.data() + b.size()));
        unsigned char *da = on_device(ha), *db = on_device(hb);
        gpu().reduce(k.t, op, da, da, db, a.size(), stream_);
        Bytes got = to_host(da, ha.size());
        for (size_t i = 0; i < a.size(); ++i) {
          uint16_t g;
          std::memcpy(&g, got.data() + 2 * i, 2);
          bool nan = std::isnan(k.widen(want[i]));
          if (nan ? !std::isnan(k.widen(g)) : g != want[i])
            FAIL() << datatype_name(k.t) << " " << redop_name(op) << " a=0x" << std::hex << a[i] << " b=0x" << partner
                   << ": got 0x" << g << ", want 0x" << want[i];
        }
        device_.clear();  // (freed below; 65536 x 2 buffers per round)
        cudaFree(da), cudaFree(db);
      }
  }
}

// Copies: device to device, overlapping both ways (as memmove), and from
// and to host memory.
TEST_F(CudaReduce, CopiesOverlapAsMemmove) {
  Bytes x(1 << 20);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<unsigned char>(i * 31 + 7);
  for (long shift : {-4093L, -1L, 1L, 4093L}) {
    unsigned char* d = on_device(x);
    const size_t bytes = x.size() - 8192;
    unsigned char* src = d + 4096;
    gpu().copy(src + shift, src, bytes, stream_);
    Bytes want = x;
    std::memmove(want.data() + 4096 + shift, want.data() + 4096, bytes);
    ASSERT_EQ(to_host(d, x.size()), want) << "shift " << shift;
  }
  Bytes back(x.size());
  unsigned char* d = on_device(Bytes(x.size(), 0));
  gpu().copy(d, x.data(), x.size(), stream_);
  gpu().copy(back.data(), d, x.size(), stream_);
  ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
  EXPECT_EQ(back, x);
}

}  // namespace
}  // namespace coll::reduce
