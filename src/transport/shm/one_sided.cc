// Puts, gets and notifications over shared memory, and the registrations
// they reach. A registered coll_mem_alloc region travels as its RegionRef
// and is reached through its mapping (region.h); any other host memory
// travels as its address in the owner, reached with cross-memory attach
// (process_vm_readv/writev, where ptrace rules allow it). Both move the
// bytes at once, on the caller's thread: the peer takes no part. A put's
// notification is a slot of its own in the pair's ring, behind the
// messages sent before it.
#include "base/error.h"
#include "transport/shm/region.h"
#include "transport/shm/shm_transport.h"

#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace coll::transport::shm {
namespace {

// The handle of memory outside any region. Its last word is 1 where a
// RegionRef has its `reserved` 0: that tells the two apart.
struct AttachRef {
  uint64_t address;
  uint64_t bytes;
  uint64_t unused = 0;
  int32_t pid;
  int32_t kind = 1;
};
static_assert(sizeof(AttachRef) == sizeof(RegionRef), "the two handles share a layout");
static_assert(offsetof(AttachRef, kind) == offsetof(RegionRef, reserved), "the two handles share a layout");

bool move_remote(int pid, uint64_t address, void* local, size_t bytes, bool write, int* err) {
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(bytes - done, size_t{1} << 30);
    iovec here{static_cast<char*>(local) + done, n};
    iovec there{reinterpret_cast<void*>(address + done), n};
    const ssize_t moved =
        write ? process_vm_writev(pid, &here, 1, &there, 1, 0) : process_vm_readv(pid, &here, 1, &there, 1, 0);
    if (moved <= 0) {
      *err = moved < 0 ? errno : EIO;
      return false;
    }
    done += static_cast<size_t>(moved);
  }
  return true;
}

}  // namespace

const Registration* ShmTransport::register_memory(const void* data, size_t bytes, MemoryKind kind) {
  if (kind != MemoryKind::kHost) return nullptr;
  return registrations_.acquire(data, bytes, kind, [&](Registration& r, uint64_t) {
    if (handle_for(data, bytes, &r.handle)) return;
    AttachRef ref{reinterpret_cast<uint64_t>(data), bytes, 0, getpid()};
    std::memcpy(r.handle.bytes.data(), &ref, sizeof(ref));
  });
}

void ShmTransport::deregister(const Registration* registration) { registrations_.release(registration); }

void ShmTransport::move_one_sided(Peer& p, void* local, const RemoteMemory& remote, size_t offset, size_t bytes,
                                  bool put) {
  check_remote_range(caps_, rank_, p.rank, put, bytes, offset, remote);
  if (bytes == 0) return;
  AttachRef attach{};
  std::memcpy(&attach, remote.handle.bytes.data(), sizeof(attach));
  if (attach.kind != 1) {
    if (!p.can_map)
      fail(Code::kSystem, "shm: rank ", rank_, " may not map ", name(p),
           "'s buffers (the init-time probe failed; see the log at INFO)");
    char* there = access(p.rank, remote.handle, remote.bytes, put ? Access::kReadWrite : Access::kRead) + offset;
    put ? std::memcpy(there, local, bytes) : std::memcpy(local, there, bytes);
    return;
  }
  if (offset + bytes > attach.bytes)
    fail(Code::kRemote, "shm: rank ", rank_, ": ", name(p), "'s handle names ", attach.bytes, " bytes, not ",
         remote.bytes);
  int err = 0;
  if (!move_remote(attach.pid, attach.address + offset, local, bytes, put, &err))
    fail_errno(Code::kSystem, err,
               str_cat("shm: rank ", rank_, put ? " writing " : " reading ", bytes, " bytes of ", name(p),
                       "'s registered memory (cross-memory attach: ptrace rules may forbid it)"),
               put ? "process_vm_writev" : "process_vm_readv");
}

RequestId ShmTransport::post_put(int rank, const Buffer& local, const RemoteMemory& remote, size_t offset,
                                 const uint64_t* notify) {
  Peer& p = peer(rank, "puts to");
  move_one_sided(p, local.data, remote, offset, local.bytes, true);
  const RequestId id = next_request_++;
  if (notify == nullptr) {
    completed_early_.push_back(id);
    return id;
  }
  // The put completes when its notification is in the ring.
  Op op{id, nullptr, 0, *notify};
  op.notify = true;
  p.sends.push_back(op);
  if (p.sends.size() == 1) progress_sends(p, completed_early_);
  return id;
}

RequestId ShmTransport::post_get(int rank, const Buffer& local, const RemoteMemory& remote, size_t offset) {
  move_one_sided(peer(rank, "gets from"), local.data, remote, offset, local.bytes, false);
  const RequestId id = next_request_++;
  completed_early_.push_back(id);
  return id;
}

RequestId ShmTransport::post_notification(int rank, uint64_t* value) {
  Peer& p = peer(rank, "waits for a notification from");
  const RequestId id = next_request_++;
  p.notify_waits.push_back(NotifyWait{id, value});
  if (p.notify_waits.size() == 1 && p.recvs.empty()) progress_recvs(p, completed_early_);
  return id;
}

}  // namespace coll::transport::shm
