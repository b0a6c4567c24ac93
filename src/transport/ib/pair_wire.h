// What the three parts of a pair (pair_setup.cc, pair.cc: the data path,
// pair_failure.cc) share: the sizes of its queues, what its immediates and
// work-request ids say, and its control area, the one buffer the peer
// writes into directly.
#pragma once

#include "transport/ib/pair.h"

#include <chrono>
#include <cstdint>

namespace coll::transport::ib {
namespace wire {

constexpr int kCtsSlots = 64;             // receives announced ahead of the data
constexpr int kRecvDepth = 128;           // receives posted per queue pair, for immediates
constexpr int kSendDepth = 1024;          // work requests per queue pair
constexpr int kDataCap = 768;             // of which data may hold; the rest is for control
constexpr size_t kMaxWrBytes = 1u << 30;  // a work request's length is 32 bits: 1 GiB pieces
constexpr size_t kSplitFrom = 128 << 10;
constexpr int kInline = 64;
constexpr auto kKeepAlive = std::chrono::milliseconds(1000);

// What an immediate says: its top three bits the kind, the rest a sequence.
constexpr uint32_t kImmData = 0u << 29, kImmNotify = 1u << 29, kImmNotice = 2u << 29, kImmMismatch = 3u << 29,
                   kImmCts = 4u << 29;
constexpr uint32_t kImmKind = 7u << 29, kImmSeq = ~kImmKind;

// A work request's id: its kind in the top byte, then what it belongs to.
enum Kind : uint64_t { kSendData = 1, kCts = 2, kOneSidedOp = 3, kKeepAliveOp = 4, kNoticeOp = 5, kRecvOp = 6 };
inline uint64_t wr_id(Kind k, uint64_t value) { return (static_cast<uint64_t>(k) << 56) | value; }
inline Kind kind_of(uint64_t id) { return static_cast<Kind>(id >> 56); }
inline uint64_t value_of(uint64_t id) { return id & ((1ull << 56) - 1); }

struct CtsEntry {
  uint64_t addr, bytes, tag;
  uint32_t rkey;
  uint32_t seq;
};

}  // namespace wire

struct Pair::Control {
  wire::CtsEntry cts_in[wire::kCtsSlots];   // the peer's receives, written by the peer
  wire::CtsEntry cts_out[wire::kCtsSlots];  // ours, as we write them to the peer
  struct Notice {
    int32_t code;
    uint32_t bytes;
    char text[kMaxNoticeBytes];
  } notice_in, notice_out;
  uint64_t notify_out[wire::kCtsSlots];
  uint64_t recv_buf[16][wire::kRecvDepth][2];  // what sends with an immediate carry
};

struct Pair::Send {
  RequestId id;
  Buffer buffer;
  uint64_t tag;
  uint32_t seq;
  Region region;
  bool started = false;
  int wrs_left = 0;
};

struct Pair::Recv {
  RequestId id;
  Buffer buffer;
  uint64_t tag;
  uint32_t seq;
  Region region;
  int imms_left = 0;
  bool announced = false;
};

struct Pair::OneSided {
  RequestId id;
  uint64_t key = 0;  // its work requests' id
  Region region;
  int wrs_left = 0;
};

}  // namespace coll::transport::ib
