// What the nvlink transport needs from the hardware: memory that a peer
// process can name and reach, and a copy engine that moves bytes between
// this rank's buffer and a peer's. The CUDA mover (cuda_mover.cc) shares
// device memory with CUDA IPC and copies with cudaMemcpyAsync; the emulated
// mover (emulated_mover.cc) stands in for the GPU on machines without one,
// with host memory and process_vm_readv/writev, so that the transport's
// protocol runs in the conformance suite everywhere (COLL_NVLINK_EMULATE=1).
#pragma once

#include "base/memory_kind.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace coll::transport::nvlink {

// A buffer of this rank's as a peer names it: the exporter's handle for
// the allocation, the allocation's identity (CUDA's buffer id: a freed and
// reallocated range gets a new one, so a peer's cache of opened handles is
// never stale) and the buffer's offset in it.
struct Shared {
  std::array<unsigned char, 64> handle{};
  uint64_t allocation = 0;
  uint64_t offset = 0;
};

class Mover {
 public:
  virtual ~Mover() = default;
  // "cuda" or "emulated": the transport's messages say which.
  virtual const char* name() const = 0;
  // This rank's part of the transport's address (its device, its pid), and
  // whether a peer with that part can be reached from here.
  virtual std::string address() const = 0;
  virtual bool reaches(const std::string& peer_address) const = 0;
  // Called once per peer before any copy with it.
  virtual void connect(int peer, const std::string& peer_address) = 0;
  // Whether buffers of `kind` are memory this mover shares.
  virtual bool moves(MemoryKind kind) const = 0;
  // How a peer names [data, data + bytes); kInvalidUsage, saying why, when
  // the memory cannot be shared (not device memory, a pool allocation).
  virtual Shared share(const void* data, size_t bytes) = 0;
  // Starts a copy of `bytes` between `local` and `peer`'s shared memory
  // `remote`: from the peer when `pull`, to it otherwise. Returns an id for
  // done().
  virtual uint64_t start(int peer, bool pull, void* local, const Shared& remote, size_t bytes) = 0;
  // Whether copy `id` has finished; a failed copy throws.
  virtual bool done(uint64_t id) = 0;
};

// The mover this machine has: the emulated one with COLL_NVLINK_EMULATE=1,
// else CUDA's (throws kSystem where the build or the machine has none).
std::unique_ptr<Mover> make_mover(int rank);
// Why the transport cannot run here ("" when it can).
std::string unavailable();

}  // namespace coll::transport::nvlink
