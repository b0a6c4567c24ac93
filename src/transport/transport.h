// The transport interface: a transport only moves bytes between two ranks.
// It never knows which collective it serves (docs/ARCHITECTURE.md).
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

#include "base/deadline.h"
#include "base/error.h"
#include "base/memory_kind.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace coll::transport {

// Where a buffer lives (base/memory_kind.h), under its old name here too.
using coll::memory_kind_name;
using coll::MemoryKind;

// A transport's own link parameters, the defaults of the cost model for
// its link class (a tuning file may override them; core/link_models.cc).
struct LinkParameters {
  double alpha_us = 0;          // one small message, one way
  double beta_ns_per_byte = 0;  // streaming, inverse bandwidth
  double chunk_bytes = 0;       // the pipelining unit that suits it
};

// What a transport can do, so that the core chooses by capability, never
// by name.
struct Capabilities {
  std::string name;              // its link class too
  bool same_host_only = false;   // e.g. shared memory
  bool gpu_memory = false;       // can move MemoryKind::kCuda buffers
  bool device_only = false;      // moves nothing else: never a peer's route for host buffers
  bool one_sided = false;        // put/get that complete without the peer's posts (RDMA, mapped memory)
  bool delivers_pieces = false;  // post_recv_sink: hands pieces over from its own buffers
  LinkParameters link;
};

using RequestId = uint64_t;

// Names a piece of this rank's registered memory for its peers; opaque to
// the core, which passes it on (put/get, and the peer-access allreduce).
struct MemoryHandle {
  std::array<unsigned char, 32> bytes{};
};

// Memory a transport registered (register_memory): what a peer needs to
// reach it is `handle`.
struct Registration {
  const void* base = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::kHost;
  MemoryHandle handle{};
};

// A buffer as posted: its bytes, its kind and, where the caller registered
// it, its registration (a transport that needs one registers it itself
// otherwise, through its cache).
struct Buffer {
  void* data = nullptr;
  size_t bytes = 0;
  MemoryKind kind = MemoryKind::kHost;
  const Registration* registration = nullptr;
};

// A peer's registered memory, as its registration's handle and size.
struct RemoteMemory {
  MemoryHandle handle{};
  size_t bytes = 0;
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

// How a transport exchanges per-pair connection data (queue-pair numbers,
// GIDs, rkeys, tokens) with a peer while it connects: the core provides it
// over the bootstrap store. publish: this rank's blob for `peer`; fetch:
// `peer`'s blob for this rank, waiting for it until the deadline. `round`
// names a later exchange of the same pair (ib: "ready", once its queue
// pairs can receive); each round is published once.
class PairExchange {
 public:
  virtual ~PairExchange() = default;
  virtual void publish(int peer, const std::string& blob, const std::string& round = {}) = 0;
  virtual std::string fetch(int peer, const Deadline& deadline, const std::string& round = {}) = 0;
  // Whether `peer` is known to be gone (its process or its communicator
  // ended). A transport that waits for a peer to connect asks now and then,
  // so that a dead peer fails the wait at once, not at the deadline.
  virtual bool gone(int /*peer*/) { return false; }
};

class Board;
class PeerAccess;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual const Capabilities& capabilities() const = 0;

  // This rank's opaque address, published through the bootstrap store: what
  // every peer needs to decide reachability and to start connecting.
  virtual std::string local_address() const = 0;

  // Establishes pairs with `peers`; `addresses[r]` is rank r's
  // local_address(). Data of each pair's own (blobs) goes through `pairs`.
  // Both ends of a pair must call it before the deadline. Idempotent for
  // pairs already connected.
  virtual void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses, PairExchange& pairs,
                       const Deadline& deadline) = 0;

  // Memory registration: a registration whose bytes peers can reach (put,
  // get, peer access), or null when this transport cannot register memory
  // of that kind. Registrations of the same range are one, counted;
  // deregister drops a count. A transport may keep a bounded cache of them
  // (registration_cache.h); everything is dropped when it is destroyed.
  virtual const Registration* register_memory(const void* data, size_t bytes, MemoryKind kind);
  virtual void deregister(const Registration* registration);

  // Two-sided: a message to / from `peer`, matched in posting order.
  virtual RequestId post_send(int peer, const Buffer& buffer, uint64_t tag) = 0;
  virtual RequestId post_recv(int peer, const Buffer& buffer, uint64_t tag) = 0;
  // Host memory, unregistered: the common case.
  RequestId post_send(int peer, const void* data, size_t bytes, uint64_t tag) {
    return post_send(peer, Buffer{const_cast<void*>(data), bytes}, tag);
  }
  RequestId post_recv(int peer, void* data, size_t bytes, uint64_t tag) {
    return post_recv(peer, Buffer{data, bytes}, tag);
  }

  // Whether post_recv_sink works for messages from `peer`
  // (capabilities().delivers_pieces, unless the transport routes elsewhere).
  virtual bool delivers_pieces_from(int /*peer*/) const { return capabilities().delivers_pieces; }
  // A receive whose pieces go to `sink` (see Sink); only where
  // delivers_pieces_from(peer). The same matching rules as post_recv.
  virtual RequestId post_recv_sink(int peer, size_t bytes, uint64_t tag, const Sink& sink);

  // One-sided, into and out of `peer`'s registered memory `remote` at
  // `offset`. post_put writes local's bytes there; with `notify`, the peer's
  // next post_notification completes with *notify once the bytes are
  // visible there (RDMA WRITE WITH IMMEDIATE). A put completes here when
  // `local` may be reused; its bytes are visible at the peer before
  // anything this rank sends the peer later. post_get reads into `local`.
  // Out of bounds is kInvalidArgument; a handle that names nothing of the
  // peer's is kRemote. Transports without native one-sided access emulate
  // them over their stream (tcp: the peer serves them while it polls).
  virtual RequestId post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                             const uint64_t* notify = nullptr);
  virtual RequestId post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset);
  // Completes when `peer`'s next notifying put has landed, with its value
  // in *value; notifications are taken in the order the peer put them.
  virtual RequestId post_notification(int peer, uint64_t* value);
  // A receive that stays posted for the life of the pair, as a control
  // channel's (nvlink's frames over shm). A peer that leaves while only such
  // receives wait on it fails nothing here: the owner, which knows whether
  // anything waits on the channel, asks check_peer.
  virtual RequestId post_standing_recv(int peer, const Buffer& buffer, uint64_t tag) {
    return post_recv(peer, buffer, tag);
  }
  // Throws, as a wait on `peer` would, if the peer exited or closed its end
  // (with its own reason, such as a revoke, where it left one); where the
  // transport can tell.
  virtual void check_peer(int /*peer*/) const {}

  // Makes progress; appends completed requests to `done`. Waits at most
  // timeout_ms for something to happen when nothing can move at once.
  virtual void poll(std::vector<RequestId>& done, int timeout_ms) = 0;

  // Optional extensions, null where the transport has none.
  // The board: a block of a few bytes per rank and round that every peer
  // reads in place (shm; core/fastpath/board_allreduce.cc).
  virtual Board* board() { return nullptr; }
  // Peer access: the peers' registered memory mapped here, for loads and
  // stores (shm; core/fastpath/peer_access_allreduce.cc).
  virtual PeerAccess* peer_access() { return nullptr; }

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

 protected:
  [[noreturn]] void lacks(const char* what) const;
};

// The peers' registered memory as pointers (Transport::peer_access).
class PeerAccess {
 public:
  virtual ~PeerAccess() = default;
  // Whether [data, data + bytes) is memory this transport's peers can map,
  // and its handle.
  virtual bool handle_for(const void* data, size_t bytes, MemoryHandle* handle) const = 0;
  // Whether this rank can map `peer`'s registered memory.
  virtual bool can_access(int peer) const = 0;
  // `peer`'s memory named by `handle`, readable here, and writable where
  // `how` asks for it; kRemote when the handle names nothing of the peer's.
  // Valid until the next call that maps the peer's memory (a transport keeps
  // a bounded number mapped), so callers take their pointers anew in every
  // operation.
  enum class Access { kRead, kReadWrite };
  virtual char* access(int peer, const MemoryHandle& handle, size_t bytes, Access how) = 0;
};

// The board (Transport::board): each rank posts a block of a few bytes per
// round, which every peer reads in place. bytes: the largest block.
// post: this rank's block of the next round (1, 2, ...), returned; a block
// stays readable until this rank posts the round after next. wait: whether
// `peer` has posted `round`, waiting up to timeout_ms (0: a look); kRemote
// when the peer is gone, a Mismatch when it sent this rank a message
// instead (it runs another operation). block: the block. A rank that waits
// for a message from a peer which posted a round this rank has not fails
// with a Mismatch too (in poll, before it sleeps).
class Board {
 public:
  struct Block {
    uint64_t tag = 0;  // the operation's, as its messages would carry it
    uint64_t count = 0;
    const void* data = nullptr;
  };
  virtual ~Board() = default;
  virtual size_t bytes() const = 0;
  virtual uint32_t post(const Block& block, size_t bytes) = 0;
  virtual bool wait(int peer, uint32_t round, uint64_t want_tag, int timeout_ms) = 0;
  virtual Block block(int peer, uint32_t round) const = 0;
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
  bool board;  // one side waits on the board (Board::wait)
};
// kInvalidArgument when [offset, offset + bytes) is not inside `remote`:
// every transport checks a put or get with it before anything moves.
void check_remote_range(const Capabilities& caps, int self, int peer, bool put, size_t bytes, size_t offset,
                        const RemoteMemory& remote);

// Throws Mismatch when (tag, bytes) does not answer (want_tag, want_bytes).
void check_match_or_fail(int self, int peer, const std::string& peer_name, uint64_t tag, uint64_t bytes,
                         uint64_t want_tag, uint64_t want_bytes);

// The error a peer's failure notice becomes here: ranks that disagree stay
// kInvalidUsage everywhere; anything else is, for us, a remote error.
[[noreturn]] void fail_with_notice(int self, const std::string& peer, int code, const std::string& reason);
// A notice's text is bounded: this much is kept, the rest cut.
constexpr size_t kMaxNoticeBytes = 1024;

}  // namespace coll::transport
