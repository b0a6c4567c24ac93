// Element-wise reductions and the AVG division on device memory, for every
// datatype and op. Each thread moves 16 bytes per load where dst, a and b
// are all 16-byte aligned (the common case: buffers from cudaMalloc and
// chunk offsets that are multiples of 16), element by element otherwise and
// for the tail. The grid is sized to the device: enough blocks to fill
// every multiprocessor a few times over, each striding through the buffer.
#include "reduce/cuda/kernels.h"
#include "reduce/dispatch.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace coll::reduce::cuda {
namespace {

constexpr int kThreads = 512;
constexpr int kBlocksPerSm = 4;

// Integer sums and products go through the unsigned twin, so that they wrap
// (as the CPU kernels do) instead of overflowing a signed type.
template <typename T>
struct Wrap {
  using type = T;
};
template <>
struct Wrap<int8_t> {
  using type = uint8_t;
};
template <>
struct Wrap<int32_t> {
  using type = uint32_t;
};
template <>
struct Wrap<int64_t> {
  using type = uint64_t;
};

// The value an element is combined in: float32 for the 16-bit floats.
__device__ inline float widen(__half x) { return __half2float(x); }
__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
template <typename T>
__device__ inline T widen(T x) {
  return x;
}
template <typename T>
__device__ inline T narrow(float x) {
  if constexpr (std::is_same_v<T, __half>)
    return __float2half_rn(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>)
    return __float2bfloat16_rn(x);
  else
    return static_cast<T>(x);
}
template <typename T>
constexpr bool kHalfWidth = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// min and max as the CPU kernels define them, so a NaN in `a` survives alike.
template <typename T, coll_redop_t Op>
__device__ inline T combine(T a, T b) {
  if constexpr (kHalfWidth<T>) {
    return narrow<T>(combine<float, Op>(widen(a), widen(b)));
  } else if constexpr (Op == COLL_SUM || Op == COLL_AVG) {
    using U = typename Wrap<T>::type;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else if constexpr (Op == COLL_PROD) {
    using U = typename Wrap<T>::type;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else if constexpr (Op == COLL_MIN) {
    return b < a ? b : a;
  } else {
    return a < b ? b : a;
  }
}

template <typename T>
struct alignas(16) Vec {
  T v[16 / sizeof(T)];
};

template <typename T, coll_redop_t Op>
__global__ void reduce_kernel(T* dst, const T* a, const T* b, size_t n, bool vectors) {
  constexpr size_t kPer = 16 / sizeof(T);
  const size_t first = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t done = 0;
  if (vectors) {
    const size_t nv = n / kPer;
    auto* dv = reinterpret_cast<Vec<T>*>(dst);
    const auto* av = reinterpret_cast<const Vec<T>*>(a);
    const auto* bv = reinterpret_cast<const Vec<T>*>(b);
    for (size_t i = first; i < nv; i += stride) {
      const Vec<T> x = av[i], y = bv[i];
      Vec<T> z;
#pragma unroll
      for (size_t k = 0; k < kPer; ++k) z.v[k] = combine<T, Op>(x.v[k], y.v[k]);
      dv[i] = z;
    }
    done = nv * kPer;
  }
  for (size_t i = done + first; i < n; i += stride) dst[i] = combine<T, Op>(a[i], b[i]);
}

template <typename T>
__global__ void divide_kernel(T* dst, size_t n, int divisor) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    if constexpr (kHalfWidth<T>)
      dst[i] = narrow<T>(widen(dst[i]) / static_cast<float>(divisor));
    else
      dst[i] = static_cast<T>(static_cast<DivideIn<T>>(dst[i]) / static_cast<DivideIn<T>>(divisor));
  }
}

// Blocks for `units` units of work (one per thread) on the current device:
// never more than fill its multiprocessors kBlocksPerSm times.
int blocks_for(size_t units) {
  static std::atomic<int> sms[64];
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= 64) device = 0;
  int count = sms[device].load(std::memory_order_relaxed);
  if (count == 0) {
    if (cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess || count <= 0) count = 1;
    sms[device].store(count, std::memory_order_relaxed);
  }
  const size_t wanted = (units + kThreads - 1) / kThreads;
  const size_t most = static_cast<size_t>(count) * kBlocksPerSm;
  return static_cast<int>(wanted < most ? (wanted ? wanted : 1) : most);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename T, coll_redop_t Op>
int reduce_as(void* dst, const void* a, const void* b, size_t n, cudaStream_t stream) {
  const bool vectors = aligned16(dst) && aligned16(a) && aligned16(b);
  // One thread per 16-byte vector; the tail (fewer than one vector) takes
  // the first threads again.
  const size_t units = vectors ? n / (16 / sizeof(T)) : n;
  reduce_kernel<T, Op><<<blocks_for(units), kThreads, 0, stream>>>(static_cast<T*>(dst), static_cast<const T*>(a),
                                                                   static_cast<const T*>(b), n, vectors);
  return cudaGetLastError();
}

template <typename T>
int reduce_typed(coll_redop_t op, void* dst, const void* a, const void* b, size_t n, cudaStream_t stream) {
  switch (op) {
    case COLL_SUM:
    case COLL_AVG:
      return reduce_as<T, COLL_SUM>(dst, a, b, n, stream);
    case COLL_PROD:
      return reduce_as<T, COLL_PROD>(dst, a, b, n, stream);
    case COLL_MIN:
      return reduce_as<T, COLL_MIN>(dst, a, b, n, stream);
    case COLL_MAX:
      return reduce_as<T, COLL_MAX>(dst, a, b, n, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

template <typename T>
cudaError_t load_typed() {
  cudaFuncAttributes attrs{};
  for (cudaError_t e :
       {cudaFuncGetAttributes(&attrs, reduce_kernel<T, COLL_SUM>),
        cudaFuncGetAttributes(&attrs, reduce_kernel<T, COLL_PROD>),
        cudaFuncGetAttributes(&attrs, reduce_kernel<T, COLL_MIN>),
        cudaFuncGetAttributes(&attrs, reduce_kernel<T, COLL_MAX>), cudaFuncGetAttributes(&attrs, divide_kernel<T>)})
    if (e != cudaSuccess) return e;
  return cudaSuccess;
}

template <typename T>
int divide_typed(void* dst, size_t n, int divisor, cudaStream_t stream) {
  divide_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), n, divisor);
  return cudaGetLastError();
}

}  // namespace

int launch_reduce(coll_datatype_t dtype, coll_redop_t op, void* dst, const void* a, const void* b, size_t count,
                  void* stream) {
  if (count == 0) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (!valid_datatype(dtype)) return cudaErrorInvalidValue;
  return dispatch_dtype<__half, __nv_bfloat16>(
      dtype, [&](auto* type) { return reduce_typed<std::remove_pointer_t<decltype(type)>>(op, dst, a, b, count, s); });
}

int launch_divide(coll_datatype_t dtype, void* dst, size_t count, int divisor, void* stream) {
  if (count == 0 || divisor == 1) return cudaSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  if (!valid_datatype(dtype)) return cudaErrorInvalidValue;
  return dispatch_dtype<__half, __nv_bfloat16>(
      dtype, [&](auto* type) { return divide_typed<std::remove_pointer_t<decltype(type)>>(dst, count, divisor, s); });
}

int load_kernels() {
  for (int t = 0; t < COLL_NUM_DATATYPES; ++t)
    if (const int e = dispatch_dtype<__half, __nv_bfloat16>(static_cast<coll_datatype_t>(t), [](auto* type) {
          return static_cast<int>(load_typed<std::remove_pointer_t<decltype(type)>>());
        }))
      return e;
  return cudaSuccess;
}

}  // namespace coll::reduce::cuda
