// The shared-memory transport, for ranks on one node.
//
// Each rank owns one inbound segment in /dev/shm holding a ring per local
// peer (segment.h). A sender copies a message into the receiver's ring for
// it, slot by slot, and the receiver copies it out into the posted buffer:
// chunks pipeline through the slots. A message of at least
// kSingleCopyBytes instead travels as a descriptor, and the receiver reads it
// straight from the sender's memory with process_vm_readv (cross-memory
// attach) — one copy — when an init-time probe showed the kernel allows it.
// With COLL_SHM_MAPPED=1, a message of at least kMappedBytes sent from a
// coll_mem_alloc buffer travels as a reference into it, which the receiver
// maps once and reads in place (region.h): one copy, without the kernel.
// The same mappings give peer access (the PeerAccess extension) to the
// peers' regions, wherever the init-time probe allows, whatever
// COLL_SHM_MAPPED says: their coll_mem_alloc buffers, and the core's
// staging. Puts and gets (one_sided.cc) use them too, and cross-memory
// attach for any other registered memory.
//
// Segments are unlinked as soon as every local rank has mapped them, so
// nothing is left in /dev/shm even after kill -9. Waiting spins briefly,
// then sleeps on a futex in the owner's segment that every peer rings when
// it has news: ranks never burn a core that another rank needs.
//
// A receive may take its message piece by piece straight from the slots
// (post_recv_sink): the executor reduces from the slot into the output, one
// copy fewer than receiving into a staging buffer first.
#pragma once

#include "base/socket.h"
#include "transport/registration_cache.h"
#include "transport/shm/segment.h"
#include "transport/transport.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace coll::transport::shm {

// A first-in first-out queue that keeps its storage: the ops of one peer
// pass through it at every call, and std::deque would allocate and free a
// block every few of them.
template <typename T>
class Fifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  void push_back(const T& item) { items_.push_back(item); }
  void pop_front() {
    if (++head_ == items_.size()) items_.clear(), head_ = 0;
  }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

// The transport, its board and its peer access in one object: the three
// share the segments and the peers' mappings.
class ShmTransport final : public Transport, public transport::Board, public PeerAccess {
 public:
  ShmTransport(int rank, int nranks, const std::string& job_tag, const std::string& host_id);
  ~ShmTransport() override;

  const Capabilities& capabilities() const override { return caps_; }
  std::string local_address() const override;
  // Nothing per pair: segments are named by the job and the ranks.
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses, PairExchange& pairs,
               const Deadline& deadline) override;
  using Transport::post_recv;
  using Transport::post_send;
  RequestId post_send(int peer, const Buffer& buffer, uint64_t tag) override;
  RequestId post_recv(int peer, const Buffer& buffer, uint64_t tag) override;
  RequestId post_recv_sink(int peer, size_t bytes, uint64_t tag, const Sink& sink) override;
  void poll(std::vector<RequestId>& done, int timeout_ms) override;
  // one_sided.cc: host memory only; a coll_mem_alloc region is reached
  // through its mapping, anything else with cross-memory attach.
  const Registration* register_memory(const void* data, size_t bytes, MemoryKind kind) override;
  void deregister(const Registration* registration) override;
  RequestId post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                     const uint64_t* notify) override;
  RequestId post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset) override;
  RequestId post_notification(int peer, uint64_t* value) override;
  RequestId post_standing_recv(int peer, const Buffer& buffer, uint64_t tag) override;
  void check_peer(int peer) const override;
  // PeerAccess
  PeerAccess* peer_access() override { return this; }
  bool handle_for(const void* data, size_t bytes, MemoryHandle* handle) const override;
  bool can_access(int peer) const override;
  char* access(int peer, const MemoryHandle& handle, size_t bytes, Access how) override;
  // Board (board.cc): there is one once every local peer is set up.
  transport::Board* board() override { return bytes() > 0 ? this : nullptr; }
  size_t bytes() const override;
  uint32_t post(const Block& block, size_t bytes) override;
  bool wait(int peer, uint32_t round, uint64_t want_tag, int timeout_ms) override;
  Block block(int peer, uint32_t round) const override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string& peer_address) const override;

  static constexpr size_t kSingleCopyBytes = 256 << 10;
  static constexpr size_t kMappedBytes = 64 << 10;
  // Each inbound ring's slots: what a message pipelines through.
  static constexpr uint32_t kSlots = 8;
  static constexpr uint32_t kSlotBytes = 32 << 10;
  static_assert(kSlotBytes % 64 == 0, "a sink's pieces are multiples of 64 bytes (transport.h)");

 private:
  // Spin this long before sleeping, when every local rank has a core of its
  // own: long enough to catch a peer that is running. With more local ranks
  // than cores a pure spin steals the core its peer needs, and sleeping at
  // once pays a futex wake-up per message; yielding between looks hands the
  // core to a peer that can run (docs/PERFORMANCE.md, "Measurements behind
  // the code").
  static constexpr auto kSpin = std::chrono::microseconds(30);
  static constexpr auto kYield = std::chrono::microseconds(2000);
  static constexpr int kMaxSleepMs = 100;  // then look whether the peers are still alive

  struct Op {
    RequestId id;
    char* data;
    size_t bytes;
    uint64_t tag;
    size_t done_bytes = 0;    // copied so far
    bool started = false;     // first slot written / checked
    uint64_t ack_target = 0;  // single copy: complete when the peer's ack count reaches it
    Sink sink{};              // a receive whose pieces go to a sink: take != null
    bool notify = false;      // a put's notification (its value in tag), sent as a slot of its own
    bool standing = false;    // post_standing_recv: the peer leaving is no error by itself
  };
  // A posted wait for a peer's notification (post_notification).
  struct NotifyWait {
    RequestId id;
    uint64_t* value;
  };
  // Hands a received piece to the receive: its sink, or a copy into its buffer.
  static void deliver(const Op& op, size_t offset, const void* data, size_t bytes);
  struct Peer {
    int rank = -1;
    int pid = 0;
    net::Fd pidfd;                   // becomes readable when the peer process exits (no pid reuse race)
    std::string segment_name;        // its segment's, which it unlinks once every local rank has mapped it
    uint32_t index_here = 0;         // its ring in our segment
    uint32_t index_there = 0;        // our ring in its segment
    Segment segment;                 // its inbound segment (we write into it)
    RingHeader* out_ring = nullptr;  // our ring in its segment, and its slots
    Segment::Slots out_slots;
    RingHeader* in_ring = nullptr;  // its ring in ours, and its slots
    Segment::Slots in_slots;
    Fifo<Op> sends, recvs, awaiting_ack;
    size_t standing_recvs = 0;  // of recvs
    Fifo<NotifyWait> notify_waits;
    uint64_t single_copies_sent = 0;  // and references sent: the peer acknowledges both alike
    PeerRegions regions;              // its coll_mem_alloc buffers that we have mapped
    bool can_map = false;             // whether we can (the init-time probe)
    // The consumer's tail as last read. Reading the real one costs a cache
    // miss (the consumer writes it), so it is re-read only when the ring
    // looks full.
    uint64_t tail_seen = 0;
  };

  void setup(const std::vector<std::string>& addresses, PairExchange& pairs, const Deadline& deadline);
  // How many CPUs the node's ranks may run on together (after setup has opened every segment).
  int cpus_of_local_ranks() const;
  // While setup waits on p: throws if its process exited, or (with `look`)
  // its communicator is gone; `before` says what it had yet to do.
  void check_coming(const Peer& p, PairExchange& pairs, bool look, const char* before) const;
  // Looks until `ready` says yes (true) or spin_ (at most timeout_ms) has
  // passed (false): spinning with a core each, yielding between looks with
  // more ranks than cores or when a peer waits on this CPU (the core goes
  // to a peer that can run, without the futex round trip through the
  // kernel). Before a wait sleeps.
  template <typename Ready>
  bool spin_until(int timeout_ms, Ready ready) {
    const auto end = std::chrono::steady_clock::now() +
                     std::min<std::chrono::microseconds>(spin_, std::chrono::milliseconds(timeout_ms));
    bool yield = yield_;
    for (int rounds = 0; std::chrono::steady_clock::now() < end; ++rounds) {
      for (int i = 0; i < 16; ++i)
        if (ready()) return true;
      if (rounds % 64 == 0) yield = yield_ || sharing_a_cpu();  // not before 16 looks: most waits end sooner
      if (yield) sched_yield();
    }
    return false;
  }
  // Whether a local peer last waited on the CPU this thread runs on now
  // (and says where this one waits). Two ranks that the scheduler put on
  // one CPU, with another idle, stay there as long as each wakes the other
  // from a futex; spinning then holds the CPU its peer needs for the whole
  // spin, every operation. Yielding hands it over, and the scheduler's
  // periodic balancing spreads them again (docs/PERFORMANCE.md).
  bool sharing_a_cpu();
  RequestId post_recv_op(Peer& p, const Op& op);
  bool progress(std::vector<RequestId>& done);
  char* map_region(Peer& p, const RegionRef& ref, size_t bytes, bool writable = false);
  bool progress_sends(Peer& p, std::vector<RequestId>& done);
  bool progress_recvs(Peer& p, std::vector<RequestId>& done);
  static bool receiving(const Peer& p) { return !p.recvs.empty() || !p.notify_waits.empty(); }
  // Whether anything but standing receives waits on the peer: what its
  // leaving fails.
  static bool awaits(const Peer& p);
  // one_sided.cc: the peer's registered memory [offset, offset + bytes) of
  // `remote`, moved to or from `local` at once.
  void move_one_sided(Peer& p, void* local, const RemoteMemory& remote, size_t offset, size_t bytes, bool put);
  void ring_bell(SegmentHeader& h);
  // Throws a Mismatch when a receive from `p` waits for what `p`, waiting
  // on the board, will never send (board.cc); whether a message from `p`
  // waits in our ring, not yet taken.
  void board_mismatch(Peer& p) const;
  static bool unread_message(const Peer& p);
  // Whether the peer neither closed nor exited; check_alive throws, naming
  // which, when it did.
  bool alive(const Peer& p) const;
  static bool exited(const Peer& p);  // its process, whether or not its segment is open yet
  void check_alive(const Peer& p) const;
  std::string name(const Peer& p) const;
  // The index in peers_ of that rank, or -1 (not on this node, or before setup).
  int local_index(int rank) const;
  Peer& peer(int rank, const char* doing);

  int rank_;
  int nranks_;
  std::string host_id_;
  std::string name_;
  Capabilities caps_;
  Segment own_;
  std::vector<Peer> peers_;      // the local peers
  std::vector<int> peer_index_;  // by rank: index into peers_, or -1 (not on this node)
  bool set_up_ = false;
  std::chrono::microseconds spin_{0};
  bool yield_ = false;
  RequestId next_request_ = 1;
  std::vector<RequestId> completed_early_;  // completed while being posted, reported by the next poll
  std::atomic<bool> closed_{false};
  uint64_t probe_word_;
  net::Fd region_probe_;           // peers take it with pidfd_getfd at setup; closed once they have
  uint32_t board_round_ = 0;       // the last round this rank posted on its board (board.cc)
  std::vector<char> cma_staging_;  // a single-copy message bound for a sink is read here first
  RegistrationCache registrations_;
};

}  // namespace coll::transport::shm
