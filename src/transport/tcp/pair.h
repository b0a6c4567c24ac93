// One TCP connection between this rank and a peer: two FIFO queues of
// posted messages (send, receive) and the framing that matches them.
//
// Frame: {magic u32, kind u32, tag u64, bytes u64} then `bytes` of
// payload, read straight into the posted buffer (no staging copy). A frame
// of kind kNotice is the sender's last word before it closes: tag is its
// error code, the payload (at most kMaxNoticeBytes) its message.
//
// Puts and gets are emulated over the stream: a kPut frame carries a
// OneSided block {registration id, offset, bytes, flags} before its
// payload, which the receiver reads straight into its registered memory
// (tag: the notification's value where flags say so); a kGetRequest names
// the bytes wanted and is answered, in order, by a kGetReply carrying
// them. The receiver serves both as it polls, posted receives or not.
#pragma once

#include "base/socket.h"
#include "transport/transport.h"

#include <chrono>
#include <deque>
#include <string>
#include <vector>

namespace coll::transport::tcp {

#pragma pack(push, 1)
struct FrameHeader {
  uint32_t magic;
  uint32_t kind;
  uint64_t tag;
  uint64_t bytes;
};
#pragma pack(pop)

constexpr uint32_t kFrameMagic = 0x50544c43;  // "CLTP"
constexpr uint32_t kFrameData = 0;
constexpr uint32_t kFrameNotice = 1;
constexpr uint32_t kFramePut = 2;
constexpr uint32_t kFrameGetRequest = 3;
constexpr uint32_t kFrameGetReply = 4;

#pragma pack(push, 1)
struct OneSided {
  uint64_t registration;  // the target's registration id (its handle)
  uint64_t offset;
  uint64_t bytes;
  uint64_t flags;  // kNotifies
};
#pragma pack(pop)
constexpr uint64_t kNotifies = 1;

// The local bytes a peer names by registration id and range; null when
// the id names no registration or the range is outside it (`why` says).
using Resolve = char* (*)(void* context, uint64_t registration, uint64_t offset, uint64_t bytes, std::string* why);

// Empty when `got` is a data frame header; else what is wrong with it.
// Pure, so that it can be fuzzed and unit-tested.
std::string check_frame(const FrameHeader& got);

class Pair {
 public:
  // silence_ms: COLL_TCP_SILENCE_MS, how long a peer's kernel may stay
  // silent (keep-alives, check_acknowledged); 0 leaves keep-alives at 20 s.
  Pair(int self, int peer, net::Fd fd, std::string peer_address, int64_t silence_ms);

  void post_send(RequestId id, const void* data, size_t bytes, uint64_t tag);
  void post_recv(RequestId id, void* data, size_t bytes, uint64_t tag);
  // One-sided, emulated (see above): the peer's registration `remote` at
  // `offset`. A put completes once sent; a get once its reply is read.
  void post_put(RequestId id, const void* data, size_t bytes, uint64_t remote, uint64_t offset, const uint64_t* notify);
  void post_get(RequestId id, void* data, size_t bytes, uint64_t remote, uint64_t offset);
  void post_notification(RequestId id, uint64_t* value);
  // Where puts and gets from the peer land: set once this rank registered
  // memory; from then on the pair reads frames as they come.
  void serve(Resolve resolve, void* context) { resolve_ = resolve, resolve_context_ = context; }

  // Move what the socket takes without blocking; completed requests are
  // appended to `done`. True if any byte moved.
  bool progress(std::vector<RequestId>& done);

  bool idle() const {
    return sends_.empty() && recvs_.empty() && gets_.empty() && notify_waits_.empty() && resolve_ == nullptr;
  }
  // Fails with kRemote when the peer's kernel has acknowledged nothing of
  // the data in flight to it for `silence_ms`, as sampled by these calls
  // (a live peer that reads nothing still acknowledges: its window closes,
  // nothing stays in flight). Call it about once a second while waiting.
  void check_acknowledged(std::chrono::steady_clock::time_point now, int64_t silence_ms);
  int fd() const { return fd_.get(); }
  // Closes the connection, first telling the peer `why` when the send
  // direction is between frames (see pair.cc).
  void shutdown(const Error* why);
  std::string describe_pending() const;

 private:
  struct Op {
    RequestId id;
    char* data;
    size_t bytes;
    uint64_t tag;
    FrameHeader header;
    size_t header_done = 0;  // bytes of header (and one-sided block) sent / received
    size_t payload_done = 0;
    OneSided one_sided{};  // sent after the header where header.kind is kFramePut or kFrameGetRequest
  };
  // The frame being read: its header, its one-sided block, where its
  // payload goes.
  struct Incoming {
    FrameHeader header{};
    OneSided one_sided{};
    size_t head_done = 0;  // of header + block
    size_t head_bytes = sizeof(FrameHeader);
    char* into = nullptr;
    size_t payload_done = 0;
    bool placed = false;  // `into` is chosen
  };
  struct NotifyWait {
    RequestId id;
    uint64_t* value;
  };

  bool progress_sends(std::vector<RequestId>& done);
  bool progress_recvs(std::vector<RequestId>& done);
  // Reads into [into, into + want); false when the socket has nothing.
  bool read_some(char* into, size_t want, size_t* got);
  // After a whole header (and block): checks it, and says where its payload goes.
  bool place(std::vector<RequestId>& done);
  // After a whole payload: completes what it answers.
  void finish(std::vector<RequestId>& done);
  // Whether something posted here waits for the peer's frames; whether
  // the pair reads them (it also does to serve the peer's puts and gets).
  bool awaits_frames() const { return !recvs_.empty() || !gets_.empty() || !notify_waits_.empty(); }
  bool wants_frames() const { return awaits_frames() || (resolve_ != nullptr && !peer_ended_); }
  [[noreturn]] void lost(const char* doing, int err);
  // After a frame header of kind kNotice: reads its text and fails with it.
  [[noreturn]] void take_notice(const FrameHeader& notice);
  // Whether the peer's last word is waiting in the socket (a send that
  // failed may find it): fails with it if so.
  void look_for_notice();
  std::string name() const;

  int self_;
  int peer_;
  net::Fd fd_;
  std::string peer_address_;
  std::deque<Op> sends_;
  std::deque<Op> recvs_;
  std::deque<Op> gets_;  // awaiting their replies, in order
  std::deque<NotifyWait> notify_waits_;
  std::deque<uint64_t> notifications_;  // arrived, not yet waited for
  Incoming in_;
  Resolve resolve_ = nullptr;
  bool peer_ended_ = false;  // its end was read while only serving
  void* resolve_context_ = nullptr;
  uint64_t received_messages_ = 0;
  // Since when every sample saw data in flight (none: nothing is in flight).
  std::chrono::steady_clock::time_point in_flight_since_{};
  std::chrono::steady_clock::time_point last_sample_{};
};

}  // namespace coll::transport::tcp
