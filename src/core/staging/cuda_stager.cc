// Device buffers through pinned host slots. Copies run on two streams of
// the stager's own (in and out, so that the two directions overlap each
// other and the transfers), created non-blocking: the caller's stream,
// even the legacy default one, is held by the gate while they run.
//
// The gate: at the call, an event records the caller's stream's work so
// far (the worker waits for it before the first copy), and the stream gets
// a wait for a counter in host-mapped memory to reach the operation's
// number (cuStreamWaitValue32, or a one-thread kernel where the device has
// no stream memory operations). The worker writes the number when the
// operation ends, failed or not, so a failure never hangs the stream: it
// is reported by coll_comm_get_async_error.
#include "core/staging/gate.h"
#include "core/staging/stager.h"
#include "reduce/cuda/check.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>

namespace coll::staging {
namespace {

using reduce::cuda::check;
using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

// Runs `fn` with `device` current on this thread, then restores the caller's.
template <typename Fn>
void on_device(int device, Fn&& fn) {
  int previous = -1;
  check(cudaGetDevice(&previous), "cudaGetDevice");
  if (previous != device) check(cudaSetDevice(device), "cudaSetDevice");
  try {
    fn();
  } catch (...) {
    if (previous != device) cudaSetDevice(previous);
    throw;
  }
  if (previous != device) check(cudaSetDevice(previous), "cudaSetDevice (back to the caller's device)");
}

class CudaStager final : public Stager {
 public:
  explicit CudaStager(size_t bytes) : bytes_(bytes) {}
  ~CudaStager() override {
    // Errors are ignored: the context may be gone at exit.
    for (auto& pair : events_)
      for (cudaEvent_t e : pair)
        if (e) cudaEventDestroy(e);
    for (cudaStream_t s : streams_)
      if (s) cudaStreamDestroy(s);
    if (memory_) cudaFreeHost(memory_);
    if (flag_) cudaFreeHost(const_cast<uint32_t*>(flag_));
  }

  Slots slots() override {
    char* m = static_cast<char*>(memory_);
    return Slots{{m, m + bytes_}, {m + 2 * bytes_, m + 3 * bytes_}, bytes_};
  }

  Ticket enter(void* stream, const void* buffer) override {
    cudaPointerAttributes attrs{};
    check(cudaPointerGetAttributes(&attrs, buffer), "cudaPointerGetAttributes");
    Ticket t{.stream = stream, .device = attrs.device};
    on_device(t.device, [&] {
      if (!memory_) start(t.device);
      cudaEvent_t ready = nullptr;
      check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags");
      t.ready = ready;
      check(cudaEventRecord(ready, static_cast<cudaStream_t>(stream)), "cudaEventRecord on the caller's stream");
      t.gate = ++issued_;
      hold(stream, t.gate);
    });
    return t;
  }

  void begin(const Ticket& t) override {
    check(cudaSetDevice(t.device), "cudaSetDevice");
    auto ready = static_cast<cudaEvent_t>(t.ready);
    const cudaError_t e = cudaEventSynchronize(ready);
    cudaEventDestroy(ready);
    check(e, "waiting for the work issued on the stream before the call");
  }

  void copy(int slot, bool in, const Copy2D& c) override {
    cudaStream_t s = streams_[in ? 0 : 1];
    check(cudaMemcpy2DAsync(c.dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.rows, cudaMemcpyDefault, s),
          in ? "copying a chunk to the host slots (cudaMemcpy2DAsync)" : "copying a chunk back (cudaMemcpy2DAsync)");
    check(cudaEventRecord(events_[slot][in ? 0 : 1], s), "cudaEventRecord");
  }

  void wait(int slot, bool in) override {
    check(cudaEventSynchronize(events_[slot][in ? 0 : 1]), "waiting for a chunk's copy");
  }

  void leave(const Ticket& t) noexcept override {
    // Every copy out is done (the pipeline waited); the stream may go on.
    std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(flag_)).store(t.gate, std::memory_order_release);
  }

 private:
  void start(int device) {
    check(cudaHostAlloc(&memory_, 4 * bytes_, cudaHostAllocPortable), "cudaHostAlloc (the staging slots)");
    void* flag = nullptr;
    check(cudaHostAlloc(&flag, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc (the stream gate)");
    flag_ = static_cast<uint32_t*>(flag);
    *const_cast<uint32_t*>(flag_) = 0;
    check(cudaHostGetDevicePointer(&flag_device_, flag, 0), "cudaHostGetDevicePointer");
    for (cudaStream_t& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    for (auto& pair : events_)
      for (cudaEvent_t& e : pair) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      wait_value_ = reinterpret_cast<WaitValue32>(fn);
    (void)device;
  }

  void hold(void* stream, uint32_t gate) {
    if (wait_value_ && wait_value_(static_cast<CUstream>(stream), reinterpret_cast<CUdeviceptr>(flag_device_), gate,
                                   CU_STREAM_WAIT_VALUE_GEQ) == CUDA_SUCCESS)
      return;
    wait_value_ = nullptr;  // not on this device: the kernel from now on
    check(launch_gate(stream, static_cast<const volatile uint32_t*>(flag_device_), gate),
          "launching the stream gate kernel");
  }

  size_t bytes_;
  void* memory_ = nullptr;
  volatile uint32_t* flag_ = nullptr;
  void* flag_device_ = nullptr;
  uint32_t issued_ = 0;
  cudaStream_t streams_[2]{};   // in, out
  cudaEvent_t events_[2][2]{};  // [slot][in, out]
  WaitValue32 wait_value_ = nullptr;
};

}  // namespace

std::unique_ptr<Stager> make_cuda_stager(size_t bytes) { return std::make_unique<CudaStager>(bytes); }

}  // namespace coll::staging
