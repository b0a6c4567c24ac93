// Device buffers through pinned host slots. Copies run on two streams of
// the stager's own (in and out, so that the two directions overlap each
// other and the transfers), created non-blocking: the caller's stream,
// even the legacy default one, is held by the gate while they run.
//
// The gate: at the call, an event records the caller's stream's work so
// far (the worker waits for it before the first copy). A private gate
// stream waits for a counter in host-mapped memory to reach the
// operation's number (cuStreamWaitValue32, or a one-thread kernel where the
// device has no stream memory operations), and the caller's stream waits
// for the gate stream by an event: the driver asks that such a wait be
// made visible to CUDA by events. The worker writes the number when the
// operation ends, failed or not, once its copies have stopped, so a
// failure never hangs the stream: it is reported by
// coll_comm_get_async_error. Numbers are written in the order taken (the
// worker runs operations in order), so the counter only grows.
//
// The hold can stall the device for good. With one hardware queue
// (CUDA_DEVICE_MAX_CONNECTIONS=1) every stream of the process shares it:
// the hold's waits come first, coll's own copies queue behind them, and
// the counter they would release is never written. And under lazy module
// loading (CUDA's default) the first launch of a kernel waits for the
// context to go idle, holding up coll's copies meanwhile: a framework that
// launches a new kernel after a coll call stalls both. So unless loading is
// eager and the queues are many (or COLL_DEVICE_HOST_SYNC=0), the stream is
// not held: the caller's thread waits for the operation instead.
#include "base/config.h"
#include "base/error.h"
#include "core/staging/gate.h"
#include "core/staging/stager.h"
#include "reduce/cuda/check.h"
#include "reduce/cuda/kernels.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

namespace coll::staging {
namespace {

using reduce::cuda::check;
using WaitValue32 = CUresult (*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

class CudaStager final : public Stager {
 public:
  CudaStager(size_t bytes, int64_t timeout_ms) : bytes_(bytes), timeout_ms_(timeout_ms) {}
  ~CudaStager() override { release_all(); }

  Slots slots() override {
    char* m = static_cast<char*>(memory_);
    return Slots{{m, m + bytes_}, {m + 2 * bytes_, m + 3 * bytes_}, bytes_};
  }

  Ticket enter(void* stream, const void* buffer) override {
    auto user = static_cast<cudaStream_t>(stream);
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(user, &capturing), "cudaStreamIsCapturing");
    if (capturing != cudaStreamCaptureStatusNone)
      fail(Code::kInvalidUsage,
           "device buffers on a stream being captured into a CUDA graph: coll's staged operations run on the host "
           "and cannot be captured (call it outside the capture)");
    cudaPointerAttributes attrs{};
    check(cudaPointerGetAttributes(&attrs, buffer), "cudaPointerGetAttributes");
    Ticket t{.stream = stream, .device = attrs.device};
    ScopedDevice on(t.device);
    if (!started_) start();
    cudaEvent_t ready = nullptr;
    check(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    t.ready = ready;
    if (cudaError_t e = cudaEventRecord(ready, user); e != cudaSuccess) {
      cudaEventDestroy(ready);
      check(e, "cudaEventRecord on the caller's stream");
    }
    if (host_sync_) {
      t.on_host = true;
      return t;
    }
    // From here on the number is taken: the worker must release it.
    t.gate = ++issued_;
    hold(user, t.gate);
    return t;
  }

  void begin(const Ticket& t) override {
    check(cudaSetDevice(t.device), "cudaSetDevice");
    auto ready = static_cast<cudaEvent_t>(t.ready);
    const cudaError_t e = cudaEventSynchronize(ready);
    cudaEventDestroy(ready);
    check(e, "waiting for the work issued on the stream before the call");
  }

  void* work_stream() override { return streams_[0]; }
  bool holds_streams() const override { return !host_sync_; }

  void copy(int slot, bool in, const Copy2D& c) override {
    cudaStream_t s = streams_[in ? 0 : 1];
    const char* what = in ? "copying a chunk to the host slots" : "copying a chunk back";
    // cudaMemcpy2DAsync refuses pitches past cudaDevAttrMaxPitch (2^31 - 1):
    // one row is a plain copy, and rows of larger pitches go one by one.
    constexpr size_t kMaxPitch = (size_t{1} << 31) - 1;
    if (c.rows == 1) {
      check(cudaMemcpyAsync(c.dst, c.src, c.width, cudaMemcpyDefault, s), what);
    } else if (c.dst_pitch > kMaxPitch || c.src_pitch > kMaxPitch) {
      for (size_t r = 0; r < c.rows; ++r)
        check(cudaMemcpyAsync(static_cast<char*>(c.dst) + r * c.dst_pitch,
                              static_cast<const char*>(c.src) + r * c.src_pitch, c.width, cudaMemcpyDefault, s),
              what);
    } else {
      check(cudaMemcpy2DAsync(c.dst, c.dst_pitch, c.src, c.src_pitch, c.width, c.rows, cudaMemcpyDefault, s), what);
    }
    check(cudaEventRecord(events_[slot][in ? 0 : 1], s), "cudaEventRecord");
  }

  // Polled against the timeout: a stalled device becomes COLL_TIMEOUT, not a hang.
  void wait(int slot, bool in) override {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const cudaError_t e = cudaEventQuery(events_[slot][in ? 0 : 1]);
      if (e != cudaErrorNotReady) {
        check(e, "waiting for a chunk's copy");
        return;
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > std::chrono::milliseconds(timeout_ms_))
        fail(Code::kTimeout, "a copy ", in ? "from the caller's device buffer" : "to the caller's device buffer",
             " did not finish within ", timeout_ms_,
             " ms (COLL_TIMEOUT_MS): the device is stalled. A kernel launched for the first time behind a held "
             "stream waits for the operation (CUDA_MODULE_LOADING=EAGER), and with few hardware queues "
             "(CUDA_DEVICE_MAX_CONNECTIONS) a held stream blocks coll's copies: COLL_DEVICE_HOST_SYNC=1 avoids both");
      if (waited > std::chrono::milliseconds(1))
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      else
        std::this_thread::yield();
    }
  }

  void leave(const Ticket& t) noexcept override {
    if (t.gate == 0 && !t.on_host) return;  // never entered
    // After a failure copies may still be in flight into the caller's
    // buffers: let them stop before the stream goes on (errors ignored).
    // Waited for up to the timeout only before the gate opens: in a stalled
    // device they may be queued behind the gate's own wait.
    const auto start = std::chrono::steady_clock::now();
    for (cudaStream_t s : streams_)
      while (cudaStreamQuery(s) == cudaErrorNotReady &&
             std::chrono::steady_clock::now() - start < std::chrono::milliseconds(timeout_ms_))
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (!t.on_host) std::atomic_ref<uint32_t>(*const_cast<uint32_t*>(flag_)).store(t.gate, std::memory_order_release);
    for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  }

 private:
  // Everything or nothing: started_ is set last, and ~CudaStager frees what
  // a failed start made.
  void start() {
    try {
      make_all();
    } catch (...) {
      release_all();
      throw;
    }
    started_ = true;
  }

  // Errors are ignored: the context may be gone at exit.
  void release_all() noexcept {
    for (auto& pair : events_)
      for (cudaEvent_t& e : pair)
        if (e) cudaEventDestroy(e), e = nullptr;
    for (cudaStream_t& s : streams_)
      if (s) cudaStreamDestroy(s), s = nullptr;
    if (gate_stream_) cudaStreamDestroy(gate_stream_), gate_stream_ = nullptr;
    if (memory_) cudaFreeHost(memory_), memory_ = nullptr;
    if (flag_) cudaFreeHost(const_cast<uint32_t*>(flag_)), flag_ = nullptr;
  }

  void make_all() {
    // Every kernel this operation may launch, loaded before a caller's
    // stream is ever held (kernels.h says why).
    check(static_cast<cudaError_t>(reduce::cuda::load_kernels()), "loading the reduction kernels");
    check(static_cast<cudaError_t>(load_gate()), "loading the stream gate kernel");
    check(cudaHostAlloc(&memory_, 4 * bytes_, cudaHostAllocPortable), "cudaHostAlloc (the staging slots)");
    void* flag = nullptr;
    check(cudaHostAlloc(&flag, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc (the stream gate)");
    flag_ = static_cast<uint32_t*>(flag);
    *const_cast<uint32_t*>(flag_) = 0;
    check(cudaHostGetDevicePointer(&flag_device_, flag, 0), "cudaHostGetDevicePointer");
    for (cudaStream_t& s : streams_) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&gate_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    for (auto& pair : events_)
      for (cudaEvent_t& e : pair) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000, cudaEnableDefault, &found) == cudaSuccess &&
        found == cudaDriverEntryPointSuccess)
      wait_value_ = reinterpret_cast<WaitValue32>(fn);
    const int64_t sync = config::get_int("COLL_DEVICE_HOST_SYNC");
    if (sync < -1 || sync > 1)
      fail(Code::kInvalidArgument, "COLL_DEVICE_HOST_SYNC=", sync,
           ": -1 (auto), 0 (hold the stream) or 1 (wait on the host)");
    const char* queues = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    const char* loading = std::getenv("CUDA_MODULE_LOADING");
    const bool few_queues = queues != nullptr && std::atoi(queues) > 0 && std::atoi(queues) < 8;
    const bool eager = loading != nullptr && std::string(loading) == "EAGER";
    host_sync_ = sync == 1 || (sync < 0 && (few_queues || !eager));
  }

  // The gate stream waits for the counter; `user` waits for the gate stream.
  void hold(cudaStream_t user, uint32_t gate) {
    if (!wait_value_ || wait_value_(static_cast<CUstream>(gate_stream_), reinterpret_cast<CUdeviceptr>(flag_device_),
                                    gate, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS) {
      wait_value_ = nullptr;  // not on this device: the kernel from now on
      check(launch_gate(gate_stream_, static_cast<const volatile uint32_t*>(flag_device_), gate),
            "launching the stream gate kernel");
    }
    cudaEvent_t passed = nullptr;
    check(cudaEventCreateWithFlags(&passed, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    const cudaError_t recorded = cudaEventRecord(passed, gate_stream_);
    const cudaError_t waited = recorded == cudaSuccess ? cudaStreamWaitEvent(user, passed, 0) : recorded;
    cudaEventDestroy(passed);  // released once the device is past it
    check(waited, "making the caller's stream wait for the gate (cudaStreamWaitEvent)");
  }

  size_t bytes_;
  int64_t timeout_ms_;
  void* memory_ = nullptr;
  volatile uint32_t* flag_ = nullptr;
  void* flag_device_ = nullptr;
  uint32_t issued_ = 0;
  bool started_ = false;
  cudaStream_t gate_stream_ = nullptr;
  cudaStream_t streams_[2]{};   // in, out
  cudaEvent_t events_[2][2]{};  // [slot][in, out]
  WaitValue32 wait_value_ = nullptr;
  bool host_sync_ = false;  // COLL_DEVICE_HOST_SYNC, or few hardware queues
};

}  // namespace

std::unique_ptr<Stager> make_cuda_stager(size_t bytes, int64_t timeout_ms) {
  return std::make_unique<CudaStager>(bytes, timeout_ms);
}

}  // namespace coll::staging
