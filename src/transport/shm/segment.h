// One rank's inbound shared-memory segment: a header, its board (below),
// then one single-producer/single-consumer ring per local peer (ring i
// carries the messages of the i-th rank on this node), then the rings' slots.
// Counters sit on their own cache lines so producer and consumer never
// write the same line.
#pragma once

#include "transport/shm/region.h"

#include <sched.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace coll::transport::shm {

struct alignas(64) RingHeader {
  alignas(64) std::atomic<uint64_t> head;       // slots published (producer; consumers poll SlotHeader::seq)
  alignas(64) std::atomic<uint64_t> tail;       // slots released (consumer)
  alignas(64) std::atomic<uint64_t> cma_acked;  // single-copy messages read (consumer)
  std::atomic<uint32_t> cma_ok;                 // the consumer can read the producer's memory
  std::atomic<uint32_t> map_ok;                 // the consumer maps the producer's coll_mem_alloc buffers (references)
};

// kInline: a whole message of at most kInlineBytes, inside the header's own
// cache line, so the consumer's one miss on that line brings everything.
// kMapped: a reference into the producer's coll_mem_alloc buffer (region.h).
// kNotify: no message, a put's notification (its value in tag).
enum class SlotKind : uint32_t { kData = 0, kCma = 1, kInline = 2, kMapped = 3, kNotify = 4 };
inline constexpr size_t kInlineBytes = 32;

struct alignas(64) SlotHeader {
  // Published last: the slot holds message `index` of the ring once
  // seq == index + 1. The consumer polls this word, not the ring's head, so
  // a small message costs it one cache line instead of three.
  std::atomic<uint64_t> seq;
  uint64_t tag;
  uint64_t total;   // bytes of the whole message
  uint32_t length;  // payload bytes in this slot
  SlotKind kind;
  union {
    struct {
      uint64_t offset;       // of this slot's payload in the message
      uint64_t cma_address;  // kCma: where the message is in the producer
      int32_t cma_pid;
    } part;
    char inline_data[kInlineBytes];  // kInline
    RegionRef mapped;                // kMapped
  };
};
static_assert(sizeof(SlotHeader) == 64, "a slot header is one cache line");

// The board: a block of a few bytes that the owner posts once per round for
// all its local peers to read in place (the one-shot allreduce,
// core/fastpath/board_allreduce.cc). Two cells, by the round's parity: a rank posts round
// k + 2 only after it has read every peer's round k + 1, which each peer
// posted only after it had read round k, so a cell is never rewritten while
// a peer may still read it. One writer per cell: the owner.
inline constexpr size_t kBoardBytes = 4096 - 24;

struct alignas(64) BoardCell {
  // Published last: the cell holds the block of round `round`. A 32-bit word,
  // for futex_wait; peers are never more than one round apart.
  std::atomic<uint32_t> round;
  uint32_t unused;
  uint64_t tag;    // the operation that posted it, as its messages' tags name it
  uint64_t count;  // its exact element count
  // Starts inside the round's line: a block of up to 40 bytes costs a
  // reader one cache miss.
  char data[kBoardBytes];
};
static_assert(sizeof(BoardCell) == 4096, "a board cell is 64 cache lines");

struct alignas(64) BoardArea {
  BoardCell cells[2];
  alignas(64) std::atomic<uint32_t> sleepers;  // peers (about to be) asleep on a cell's round
};

struct alignas(64) SegmentHeader {
  uint64_t magic;
  uint32_t nlocal;
  uint32_t nslots;
  uint32_t slot_bytes;
  int32_t pid;
  uint64_t probe_address;  // a word peers read with process_vm_readv to test single copy
  uint64_t probe_value;
  int32_t probe_fd;      // a memfd peers take with pidfd_getfd to test buffer sharing
  uint64_t probe_inode;  // its inode
  // The CPUs the owner may run on when it made the segment (empty: unknown),
  // so that the node's ranks know how many cores they share.
  cpu_set_t cpus;
  alignas(64) std::atomic<uint32_t> doorbell;  // bumped by anyone with news for the owner
  std::atomic<uint32_t> sleepers;              // the owner is (about to be) asleep on the doorbell
  // The CPU the owner was on when it last waited beyond its first looks
  // (-1: not yet), so that a peer spinning on the same CPU yields to it.
  alignas(64) std::atomic<int32_t> waiting_cpu;
  alignas(64) std::atomic<int32_t> attached;  // local peers that have mapped this segment
  std::atomic<uint32_t> aborted;              // the owner aborted: its peers must stop waiting on it
  int32_t notice_code;                        // why, when it failed (written before `aborted`)
  char notice[1024];                          // NUL-terminated; empty for a plain abort
};

class Segment {
 public:
  Segment() = default;
  Segment(Segment&& other) noexcept;
  Segment& operator=(Segment&& other) noexcept;
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment();

  // What peers probe at setup (SegmentHeader's probe_ fields). Written
  // before the segment is marked ready, so that no peer reads them unset.
  struct Probes {
    uint64_t address = 0, value = 0;
    int32_t fd = -1;
    uint64_t inode = 0;
  };
  // Creates /dev/shm/<name> (name starts with '/'); kSystem with the space
  // it needs when /dev/shm is too small.
  static Segment create(const std::string& name, uint32_t nlocal, uint32_t nslots, uint32_t slot_bytes,
                        const Probes& probes);
  // Maps an existing segment; false while it does not exist yet.
  static bool try_open(const std::string& name, Segment* out);

  static size_t bytes_for(uint32_t nlocal, uint32_t nslots, uint32_t slot_bytes);

  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }
  BoardArea& board() const;
  RingHeader& ring(uint32_t i) const;
  // The slots of ring `ring`. Indexing is the hot path's address arithmetic:
  // slot `index` modulo nslots (a power of two), without a division and
  // without a look at the header.
  class Slots {
   public:
    Slots() = default;
    Slots(char* base, size_t stride, uint64_t mask) : base_(base), stride_(stride), mask_(mask) {}
    SlotHeader& operator[](uint64_t index) const {
      return *reinterpret_cast<SlotHeader*>(base_ + (index & mask_) * stride_);
    }

   private:
    char* base_ = nullptr;
    size_t stride_ = 0;
    uint64_t mask_ = 0;
  };
  Slots slots(uint32_t ring) const;
  char* payload(SlotHeader& slot) const { return reinterpret_cast<char*>(&slot + 1); }
  void unlink();
  const std::string& name() const { return name_; }
  bool mapped() const { return base_ != nullptr; }

 private:
  void* base_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool linked_ = false;
};

// futex wait/wake on a word in shared memory (not FUTEX_PRIVATE: other processes wake us).
void futex_wait(std::atomic<uint32_t>& word, uint32_t seen, int timeout_ms);
void futex_wake(std::atomic<uint32_t>& word);

}  // namespace coll::transport::shm
