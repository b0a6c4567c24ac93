// The emulated mover: host memory plays device memory and
// process_vm_readv/writev plays the copy engine, so that the nvlink
// transport's protocol (matching, one-sided operations, failures) is tested
// on machines without a GPU. It copies at once, so every copy is done when
// it starts. Only the hardware is emulated: the transport above it is the
// one that runs on GPUs.
#include "transport/nvlink/mover.h"

#include "base/error.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

namespace coll::transport::nvlink {
namespace {

constexpr const char* kPrefix = "emulated:";

class EmulatedMover final : public Mover {
 public:
  explicit EmulatedMover(int rank) : rank_(rank) {}

  const char* name() const override { return "emulated"; }
  std::string address() const override { return kPrefix + std::to_string(getpid()); }
  bool reaches(const std::string& peer) const override { return peer.rfind(kPrefix, 0) == 0; }

  void connect(int peer, const std::string& peer_address) override {
    if (!reaches(peer_address))
      fail(Code::kInvalidUsage, "nvlink on rank ", rank_, ": rank ", peer, " does not emulate the GPU ('", peer_address,
           "'): set COLL_NVLINK_EMULATE alike on every rank");
    if (pids_.size() <= static_cast<size_t>(peer)) pids_.resize(static_cast<size_t>(peer) + 1, -1);
    pids_[static_cast<size_t>(peer)] = std::stoi(peer_address.substr(std::strlen(kPrefix)));
  }

  // Host memory plays device memory.
  bool moves(MemoryKind kind) const override { return kind == MemoryKind::kHost; }

  Shared share(const void* data, size_t) override {
    Shared s;
    s.allocation = reinterpret_cast<uintptr_t>(data);
    return s;
  }

  uint64_t start(int peer, bool pull, void* local, const Shared& remote, size_t bytes) override {
    char* at = reinterpret_cast<char*>(remote.allocation + remote.offset);
    size_t moved = 0;
    while (moved < bytes) {
      iovec mine{static_cast<char*>(local) + moved, bytes - moved};
      iovec theirs{at + moved, bytes - moved};
      const pid_t pid = pids_.at(static_cast<size_t>(peer));
      ssize_t n =
          pull ? process_vm_readv(pid, &mine, 1, &theirs, 1, 0) : process_vm_writev(pid, &mine, 1, &theirs, 1, 0);
      if (n < 0 && errno == EINTR) continue;
      // The peer's memory is gone under the copy: it died (a process being
      // torn down gives EFAULT before ESRCH), as a GPU peer's would.
      if (n < 0 && (errno == ESRCH || errno == EFAULT))
        fail(Code::kRemote, "nvlink on rank ", rank_, ": rank ", peer, " (pid ", pid, ") is gone (",
             std::strerror(errno), " reading its memory)");
      if (n <= 0)
        fail(Code::kSystem, "nvlink (emulated) on rank ", rank_, ": ", pull ? "process_vm_readv" : "process_vm_writev",
             " from rank ", peer, " failed: ", std::strerror(errno),
             " (the emulation reads and writes the peer's memory: same user, and kernel.yama.ptrace_scope 0 or "
             "CAP_SYS_PTRACE)");
      moved += static_cast<size_t>(n);
    }
    return ++copies_;
  }

  bool done(uint64_t) override { return true; }

 private:
  int rank_;
  std::vector<pid_t> pids_;
  uint64_t copies_ = 0;
};

}  // namespace

std::unique_ptr<Mover> make_emulated_mover(int rank) { return std::make_unique<EmulatedMover>(rank); }

}  // namespace coll::transport::nvlink
