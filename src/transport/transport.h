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
//   kSystem the syscall and errno. Posts may throw too: a transport may
//   start a message (or take one that is waiting) as it is posted.
// - Not thread-safe: one communicator drives it from one thread at a time.
// - A peer that is gone (its process exited, its node fell silent, it
//   closed) fails what is pending with it as kRemote, within the timeout,
//   by the transport's own means, found while poll() waits (tcp: closure,
//   keep-alives and the acknowledgement check, COLL_TCP_SILENCE_MS; shm: a
//   pidfd and the peer's flag); what the peer sent before it closed is
//   delivered first. close(why) passes this rank's failure on to its peers.
//   The conformance suite and the kill -9 trials hold every transport in
//   tests/support/transports.h to this.
#pragma once

#include "base/auth.h"
#include "base/deadline.h"
#include "base/error.h"

#include <array>
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
  bool delivers_pieces = false;  // post_recv_sink: hands pieces over from its own buffers
  double latency_us = 0;         // one small message, one way (model default)
  double bandwidth_gbps = 0;     // streaming, one direction (model default)
};

using RequestId = uint64_t;

// Names a piece of this rank's registered memory (coll_mem_alloc) for peers
// that can access it one-sidedly (Transport::access); opaque to the core.
struct MemoryHandle {
  std::array<unsigned char, 32> bytes{};
};

// Where a message goes when the receiver wants its pieces rather than a
// copy (post_recv_sink): the transport calls take(*this, offset, data, bytes)
// for each piece as it arrives, in order, straight from its own memory, which
// is valid only during the call. The receiver can reduce a piece into place
// without first copying it out. Every piece but the last is a multiple of
// 64 bytes long, so no element of a datatype is ever split.
struct Sink {
  void (*take)(const Sink& self, size_t offset, const void* data, size_t bytes) = nullptr;
  void* context = nullptr;  // the receiver's
};

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

  // Whether post_recv_sink works for messages from `peer`
  // (capabilities().delivers_pieces, unless the transport routes elsewhere).
  virtual bool delivers_pieces_from(int /*peer*/) const { return capabilities().delivers_pieces; }
  // A receive whose pieces go to `sink` (see Sink); only where
  // delivers_pieces_from(peer). The same matching rules as post_recv.
  virtual RequestId post_recv_sink(int peer, size_t bytes, uint64_t tag, const Sink& sink);

  // Makes progress; appends completed requests to `done`. Waits at most
  // timeout_ms for something to happen when nothing can move at once.
  virtual void poll(std::vector<RequestId>& done, int timeout_ms) = 0;

  // One-sided access to registered memory (capabilities().one_sided_write),
  // for algorithms that read their peers' buffers and write into them
  // directly (core/direct_access.cc). handle_for: whether [data, data +
  // bytes) is memory this transport's peers can access, and its handle.
  virtual bool handle_for(const void* /*data*/, size_t /*bytes*/, MemoryHandle* /*handle*/) const { return false; }
  // Whether this rank can access `peer`'s registered memory.
  virtual bool can_access(int /*peer*/) const { return false; }
  // `peer`'s memory named by `handle`, readable here, and writable where
  // `how` asks for it; kRemote when the handle names nothing of the peer's.
  // Valid until the next call that maps the peer's memory (a transport keeps
  // a bounded number mapped), so callers take their pointers anew in every
  // operation.
  enum class Access { kRead, kReadWrite };
  virtual char* access(int peer, const MemoryHandle& handle, size_t bytes, Access how);

  // A board (shm): each rank posts a block of a few bytes per round, which
  // every peer reads in place, for the one-shot allreduce (core/oneshot.cc).
  // board_bytes: the largest block, 0 where there is no board for every
  // peer. board_post: this rank's block of the next round (1, 2, ...),
  // returned; a block stays readable until this rank posts the round after
  // next.
  // board_wait: whether `peer` has posted `round`, waiting up to timeout_ms
  // (0: a look); kRemote when the peer is gone, a Mismatch when it sent this
  // rank a message instead (it runs another operation). board_block: the
  // block. A rank that waits for a message from a peer which posted a round
  // this rank has not fails with a Mismatch too (in poll, before it sleeps).
  struct BoardBlock {
    uint64_t tag = 0;  // the operation's, as its messages would carry it
    uint64_t count = 0;
    const void* data = nullptr;
  };
  virtual size_t board_bytes() const { return 0; }
  virtual uint32_t board_post(const BoardBlock& block, size_t bytes);
  virtual bool board_wait(int peer, uint32_t round, uint64_t want_tag, int timeout_ms);
  virtual BoardBlock board_block(int peer, uint32_t round) const;

  // A short description of what is pending with `peer`, for timeout messages.
  virtual std::string pending_with(int peer) const = 0;

  // Closes every connection; peers see their connection end. `why` is this
  // rank's failure (null for an abort): where the transport can, it tells the
  // peers, so that every rank reports a failure by its origin (the rank that
  // died first, the operations that disagreed) rather than by its neighbour.
  virtual void close(const Error* why) = 0;

  // Whether this transport can connect to the rank whose local_address() is
  // `peer_address` (shared memory: only on the same node).
  virtual bool reaches(const std::string& peer_address) const = 0;
};

// Empty when a message (tag, bytes) answers a receive posted for
// (want_tag, want_bytes); else why not. Every transport checks with it.
std::string check_match(uint64_t tag, uint64_t bytes, uint64_t want_tag, uint64_t want_bytes);

// A message that does not answer the receive it met: the two ranks disagree
// on what they are doing (kInvalidUsage). The tags travel with it, for the
// core to say what differs: a transport does not know what tags mean.
class Mismatch : public Error {
 public:
  Mismatch(const std::string& message, int peer, uint64_t got_tag, uint64_t want_tag, bool board = false)
      : Error(Code::kInvalidUsage, message), peer(peer), got_tag(got_tag), want_tag(want_tag), board(board) {}
  int peer;
  uint64_t got_tag, want_tag;
  bool board;  // one side waits on the board (Transport::board_wait)
};
// Throws Mismatch when (tag, bytes) does not answer (want_tag, want_bytes).
void check_match_or_fail(int self, int peer, const std::string& peer_name, uint64_t tag, uint64_t bytes,
                         uint64_t want_tag, uint64_t want_bytes);

// The error a peer's failure notice becomes here: ranks that disagree stay
// kInvalidUsage everywhere; anything else is, for us, a remote error.
[[noreturn]] void fail_with_notice(int self, const std::string& peer, int code, const std::string& reason);
// A notice's text is bounded: this much is kept, the rest cut.
constexpr size_t kMaxNoticeBytes = 1024;

// TCP sockets over the interface COLL_SOCKET_IFNAME picks (transport/tcp/).
// `host` (this node's id) travels in the address, so that peers name the
// node in their errors; empty leaves it out.
std::unique_ptr<Transport> make_tcp_transport(int rank, int nranks, const auth::Secret& secret,
                                              const std::string& host = "");

// Shared memory between ranks of one node (transport/shm/). `job_tag` names
// the job's segments; `host_id` is this node's identity.
std::unique_ptr<Transport> make_shm_transport(int rank, int nranks, const std::string& job_tag,
                                              const std::string& host_id);

}  // namespace coll::transport
