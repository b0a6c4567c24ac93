// The transport interface: a transport only moves bytes between two ranks.
// It never knows which collective it serves (see DESIGN.md).
//
// Contract, for every implementation:
// - Messages between a pair are matched in posting order, separately in each
//   direction (like MPI's non-overtaking rule); a send and its receive carry
//   the same tag and length, and a mismatch is an error naming both, never
//   silent corruption.
// - A posted region must stay valid until its request completes.
// - Any size, 0 and more than 4 GiB included.
// - Errors are coll::Error: kRemote names the peer rank and address,
//   kSystem the syscall and errno.
// - Not thread-safe: one communicator drives it from one thread at a time.
#pragma once

#include "core/auth.h"
#include "core/deadline.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace coll::transport {

// What a transport can do, so that the core chooses by capability, not name.
struct Capabilities {
  std::string name;
  bool same_host_only = false;   // e.g. shared memory
  bool gpu_memory = false;       // can move device buffers
  bool one_sided_write = false;  // RDMA-style writes into registered memory
  double latency_us = 0;         // one small message, one way (model default)
  double bandwidth_gbps = 0;     // streaming, one direction (model default)
};

using RequestId = uint64_t;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const Capabilities& capabilities() const = 0;

  // This rank's opaque address, published through the bootstrap store.
  virtual std::string local_address() const = 0;

  // Establishes pairs with `peers`; `addresses[r]` is rank r's
  // local_address(). Both ends of a pair must call it before the deadline.
  // Idempotent for pairs already connected.
  virtual void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                       const Deadline& deadline) = 0;

  virtual RequestId post_send(int peer, const void* data, size_t bytes, uint64_t tag) = 0;
  virtual RequestId post_recv(int peer, void* data, size_t bytes, uint64_t tag) = 0;

  // Makes progress; appends completed requests to `done`. Waits at most
  // timeout_ms for something to happen when nothing can move at once.
  virtual void poll(std::vector<RequestId>& done, int timeout_ms) = 0;

  // A short description of what is pending with `peer`, for timeout messages.
  virtual std::string pending_with(int peer) const = 0;

  // Closes every connection; peers see their connection end (abort).
  virtual void close() = 0;

  // Whether this transport can connect to the rank whose local_address() is
  // `peer_address` (shared memory: only on the same node).
  virtual bool reaches(const std::string& peer_address) const = 0;
};

// Empty when a message (tag, bytes) answers a receive posted for
// (want_tag, want_bytes); else why not. Every transport checks with it.
std::string check_match(uint64_t tag, uint64_t bytes, uint64_t want_tag, uint64_t want_bytes);

// TCP sockets over the interface COLL_SOCKET_IFNAME picks (transport/tcp/).
std::unique_ptr<Transport> make_tcp_transport(int rank, int nranks, const auth::Secret& secret);

// Shared memory between ranks of one node (transport/shm/). `job_tag` names
// the job's segments; `host_id` is this node's identity.
std::unique_ptr<Transport> make_shm_transport(int rank, int nranks, const std::string& job_tag,
                                              const std::string& host_id);

}  // namespace coll::transport
