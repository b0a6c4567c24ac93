// The CUDA mover: device memory shared between processes with CUDA IPC
// handles, copied peer to peer by the copy engine (cudaMemcpyAsync on a
// stream of the transport's own), or for messages of up to
// COLL_NVLINK_KERNEL_BYTES by a kernel that reads or writes the peer's
// memory (peer_copy.cu). Ranks on one GPU (CUDA IPC within one
// device) and on GPUs with peer access (NVLink, PCIe) alike.
//
// Opened handles are cached per peer and allocation: CUDA's buffer id names
// an allocation for its whole life and is never reused, so a range that a
// peer freed and allocated again gets a new entry rather than a stale
// mapping. The cache is bounded; an entry no copy uses is closed first.
#include "transport/nvlink/mover.h"

#include "base/config.h"
#include "base/cuda_device.h"
#include "base/error.h"
#include "transport/nvlink/peer_copy.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <cstring>
#include <list>
#include <map>
#include <string>
#include <vector>

namespace coll::transport::nvlink {
namespace {

constexpr const char* kPrefix = "cuda:";
constexpr size_t kMaxOpened = 256;
constexpr size_t kMaxExported = 4096;

void check(cudaError_t err, int rank, const char* what) {
  if (err == cudaSuccess) return;
  fail(Code::kSystem, "nvlink on rank ", rank, ": ", what, " failed: ", cudaGetErrorName(err), " (",
       cudaGetErrorString(err), ")");
}

template <typename Fn>
Fn driver_entry(const char* name, int rank) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess)
    fail(Code::kSystem, "nvlink on rank ", rank, ": the CUDA driver has no ", name, " (update the driver)");
  return reinterpret_cast<Fn>(fn);
}

using GetAddressRange = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
using GetAttribute = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);

class CudaMover final : public Mover {
 public:
  explicit CudaMover(int rank) : rank_(rank) {
    const int64_t kernel_bytes = config::get_int("COLL_NVLINK_KERNEL_BYTES");
    if (kernel_bytes < 0)
      fail(Code::kInvalidArgument, "COLL_NVLINK_KERNEL_BYTES=", kernel_bytes, " on rank ", rank_,
           " must be 0 or more (bytes)");
    kernel_bytes_ = static_cast<size_t>(kernel_bytes);
    check(cudaGetDevice(&device_), rank_, "cudaGetDevice");
    char bus[64] = {};
    check(cudaDeviceGetPCIBusId(bus, sizeof bus, device_), rank_, "cudaDeviceGetPCIBusId");
    bus_ = bus;
    ScopedDevice on(device_);
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), rank_, "cudaStreamCreate");
    check(static_cast<cudaError_t>(load_peer_copy()), rank_, "loading the peer copy kernel");
    address_range_ = driver_entry<GetAddressRange>("cuMemGetAddressRange", rank_);
    attribute_ = driver_entry<GetAttribute>("cuPointerGetAttribute", rank_);
  }

  ~CudaMover() override {
    try {
      ScopedDevice on(device_);
      cudaStreamSynchronize(stream_);
      for (auto& [id, copy] : copies_) cudaEventDestroy(copy.event);
      for (cudaEvent_t e : free_events_) cudaEventDestroy(e);
      for (Opened& o : opened_) cudaIpcCloseMemHandle(o.base);
      cudaStreamDestroy(stream_);
    } catch (const Error&) {  // the driver is gone (process exit): nothing is left to release
    }
  }

  const char* name() const override { return "cuda"; }
  // "cuda:<PCI bus id of this rank's device>": device indices differ
  // between processes (CUDA_VISIBLE_DEVICES), bus ids do not.
  std::string address() const override { return kPrefix + bus_; }

  bool reaches(const std::string& peer) const override {
    if (peer.rfind(kPrefix, 0) != 0) return false;
    int dev = -1;
    if (cudaDeviceGetByPCIBusId(&dev, peer.substr(std::strlen(kPrefix)).c_str()) != cudaSuccess) {
      cudaGetLastError();
      return false;  // not visible to this process
    }
    int can = 0;
    return dev == device_ || (cudaDeviceCanAccessPeer(&can, device_, dev) == cudaSuccess && can != 0);
  }

  void connect(int peer, const std::string& peer_address) override {
    if (!reaches(peer_address))
      fail(Code::kInvalidUsage, "nvlink on rank ", rank_, " (GPU ", bus_, "): rank ", peer, "'s GPU ('", peer_address,
           "') is neither this one nor one it has peer access to");
  }

  bool moves(MemoryKind kind) const override { return kind == MemoryKind::kCuda; }

  Shared share(const void* data, size_t bytes) override {
    ScopedDevice on(device_);
    const auto ptr = reinterpret_cast<CUdeviceptr>(data);
    CUdeviceptr base = 0;
    size_t size = 0;
    unsigned long long id = 0;
    if (address_range_(&base, &size, ptr) != CUDA_SUCCESS ||
        attribute_(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, ptr) != CUDA_SUCCESS)
      fail(Code::kInvalidUsage, "nvlink on rank ", rank_, ": the buffer at ", data,
           " is not device memory of this process");
    if (ptr + bytes > base + size)
      fail(Code::kInvalidArgument, "nvlink on rank ", rank_, ": the buffer at ", data, " (", bytes,
           " bytes) runs past the end of its allocation (", size, " bytes)");
    Shared s;
    s.allocation = id;
    s.offset = ptr - base;
    auto it = exported_.find(id);
    if (it == exported_.end()) {
      cudaIpcMemHandle_t h{};
      const cudaError_t err = cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(base));
      if (err != cudaSuccess) {
        cudaGetLastError();
        fail(Code::kInvalidUsage, "nvlink on rank ", rank_, ": the device buffer at ", data,
             " cannot be shared with CUDA IPC (", cudaGetErrorName(err),
             "): memory from cudaMallocAsync pools or cuMemCreate cannot be; allocate it with cudaMalloc");
      }
      if (exported_.size() >= kMaxExported) exported_.clear();
      it = exported_.emplace(id, h).first;
    }
    static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(s.handle));
    std::memcpy(s.handle.data(), &it->second, sizeof(cudaIpcMemHandle_t));
    return s;
  }

  uint64_t start(int peer, bool pull, void* local, const Shared& remote, size_t bytes) override {
    ScopedDevice on(device_);
    auto opened = open(peer, remote);
    char* theirs = static_cast<char*>(opened->base) + remote.offset;
    void* dst = pull ? local : theirs;
    const void* src = pull ? theirs : local;
    if (bytes <= kernel_bytes_)
      check(static_cast<cudaError_t>(launch_peer_copy(stream_, dst, src, bytes)), rank_, "the peer copy kernel");
    else
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), rank_, "cudaMemcpyAsync (peer to peer)");
    cudaEvent_t e = nullptr;
    if (free_events_.empty()) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), rank_, "cudaEventCreate");
    } else {
      e = free_events_.back();
      free_events_.pop_back();
    }
    check(cudaEventRecord(e, stream_), rank_, "cudaEventRecord");
    ++opened->copies;
    copies_[++next_] = Copy{e, opened};
    return next_;
  }

  bool done(uint64_t id) override {
    auto it = copies_.find(id);
    if (it == copies_.end()) return true;
    ScopedDevice on(device_);
    const cudaError_t err = cudaEventQuery(it->second.event);
    if (err == cudaErrorNotReady) return false;
    check(err, rank_, "a peer-to-peer copy");
    free_events_.push_back(it->second.event);
    --it->second.opened->copies;
    copies_.erase(it);
    return true;
  }

 private:
  struct Opened {
    int peer;
    uint64_t allocation;
    void* base;
    int copies = 0;  // in flight
  };
  using OpenedIt = std::list<Opened>::iterator;
  struct Copy {
    cudaEvent_t event;
    OpenedIt opened;
  };

  // The peer's allocation mapped here, most recently used first.
  OpenedIt open(int peer, const Shared& remote) {
    for (auto it = opened_.begin(); it != opened_.end(); ++it)
      if (it->peer == peer && it->allocation == remote.allocation) {
        opened_.splice(opened_.begin(), opened_, it);
        return opened_.begin();
      }
    if (opened_.size() >= kMaxOpened)
      for (auto it = std::prev(opened_.end());; --it) {
        if (it->copies == 0) {
          cudaIpcCloseMemHandle(it->base);
          opened_.erase(it);
          break;
        }
        if (it == opened_.begin()) break;
      }
    cudaIpcMemHandle_t h{};
    std::memcpy(&h, remote.handle.data(), sizeof h);
    void* base = nullptr;
    const cudaError_t err = cudaIpcOpenMemHandle(&base, h, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      cudaGetLastError();
      fail(Code::kRemote, "nvlink on rank ", rank_, ": cannot open rank ", peer,
           "'s device buffer (cudaIpcOpenMemHandle: ", cudaGetErrorName(err), ", ", cudaGetErrorString(err),
           "): was it freed while in use?");
    }
    opened_.push_front(Opened{peer, remote.allocation, base});
    return opened_.begin();
  }

  int rank_;
  size_t kernel_bytes_ = 0;
  int device_ = 0;
  std::string bus_;
  cudaStream_t stream_ = nullptr;
  GetAddressRange address_range_ = nullptr;
  GetAttribute attribute_ = nullptr;
  std::map<uint64_t, cudaIpcMemHandle_t> exported_;  // by allocation
  std::list<Opened> opened_;
  std::map<uint64_t, Copy> copies_;
  std::vector<cudaEvent_t> free_events_;
  uint64_t next_ = 0;
};

}  // namespace

std::unique_ptr<Mover> make_cuda_mover(int rank) { return std::make_unique<CudaMover>(rank); }

std::string cuda_unavailable() {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorName(err) + ")";
  }
  return n == 0 ? "no CUDA device" : "";
}

}  // namespace coll::transport::nvlink
