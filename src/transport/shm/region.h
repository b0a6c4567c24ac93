// Buffers that the other ranks of a node can map: coll_mem_alloc's memory.
//
// coll_mem_alloc puts each buffer in a memfd of its own and keeps the
// descriptor open. A large message sent from such a buffer over shared
// memory then travels as a reference (region id, descriptor number, inode,
// offset): the receiver takes a copy of the descriptor with pidfd_getfd, maps
// the region once, and reads the bytes where the sender keeps them. One pass
// over the data instead of two (into the slots, out of them), and no kernel
// copy per message as with process_vm_readv. NCCL's registered buffers
// (ncclMemAlloc, ncclCommRegister) play the same part for GPUs.
//
// A mapping outlives the owner's coll_mem_free and even its death (a memfd's
// pages live while anyone maps them), so reading a dead peer's region is
// never a fault; region ids are never reused, so a stale mapping is never
// taken for a new region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coll::transport::shm {

// Where a message lies in its sender's region, as the slot carries it.
struct RegionRef {
  uint64_t offset;       // of the message in the region
  uint64_t id;           // unique in the owning process, never reused
  uint64_t inode;        // of the memfd: a descriptor number reused for another file is caught
  int32_t fd;            // the owner's descriptor number
  int32_t reserved = 0;  // no padding: a reference travels byte for byte (slots, memory handles)
};

// The process's regions. Thread-safe. allocate_region throws coll::Error
// (kSystem with errno when the memfd cannot be made or mapped); `name` is
// the memfd's, as /proc/<pid>/maps shows it ("/memfd:coll-mem").
void* allocate_region(size_t bytes, const char* name = "coll-mem");
// false when ptr is not a region's start.
bool free_region(void* ptr);
// Whether [data, data + bytes) lies in one region; if so fills *ref.
bool find_region(const void* data, size_t bytes, RegionRef* ref);

// The regions of one peer that this rank has mapped. Not thread-safe (one
// transport's). At most kMaxMappings stay mapped; the least recently used
// goes first.
class PeerRegions {
 public:
  PeerRegions() = default;
  PeerRegions(PeerRegions&& other) noexcept : maps_(std::move(other.maps_)) {}
  PeerRegions& operator=(PeerRegions&&) = delete;
  PeerRegions(const PeerRegions&) = delete;
  PeerRegions& operator=(const PeerRegions&) = delete;
  ~PeerRegions();

  // The peer's bytes at `ref`, mapping its region on first use through the
  // peer's pidfd; `bytes` must lie inside it. kRemote when the descriptor
  // cannot be taken or is not the region announced (the caller names the peer).
  // Read-only unless `writable` (one-sided access, core/fastpath/peer_access_allreduce.cc):
  // a region is made writable only when it is written, so that /proc/self/maps
  // tells the two uses apart.
  char* map(int pidfd, const RegionRef& ref, size_t bytes, bool writable = false);

  static constexpr size_t kMaxMappings = 32;

 private:
  struct Mapping {
    uint64_t id;
    char* base;
    size_t bytes;
    bool writable;
  };
  std::vector<Mapping> maps_;  // most recently used last
};

// Whether this process may take descriptor `fd` of the process behind
// `pidfd`, and it is the file with `inode`: the init-time probe that decides
// whether this rank maps a peer's regions (its messages as references, its
// buffers and staging for the direct-access allreduce). `why` says why not.
bool can_take_descriptor(int pidfd, int fd, uint64_t inode, std::string* why);

// Why this process cannot take its peers' descriptors, known without trying
// (a refused attempt leaves a notice in the kernel log): Yama's
// kernel.yama.ptrace_scope of 1 or 2 without CAP_SYS_PTRACE, or 3. Empty
// when it may try.
std::string descriptor_taking_refused();

// A memfd of no size whose descriptor peers probe; its inode.
int make_probe(uint64_t* inode);

}  // namespace coll::transport::shm
