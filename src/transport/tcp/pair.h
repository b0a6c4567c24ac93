// One TCP connection between this rank and a peer: two FIFO queues of
// posted messages (send, receive) and the framing that matches them.
//
// Frame: {magic u32, reserved u32, tag u64, bytes u64} then `bytes` of
// payload, read straight into the posted buffer (no staging copy).
#pragma once

#include "core/socket.h"
#include "transport/transport.h"

#include <deque>
#include <string>
#include <vector>

namespace coll::transport::tcp {

#pragma pack(push, 1)
struct FrameHeader {
  uint32_t magic;
  uint32_t reserved;
  uint64_t tag;
  uint64_t bytes;
};
#pragma pack(pop)

constexpr uint32_t kFrameMagic = 0x50544c43;  // "CLTP"

// Empty when `got` answers a receive posted for (tag, bytes); else why not.
// Pure, so that it can be fuzzed and unit-tested.
std::string check_frame(const FrameHeader& got, uint64_t tag, size_t bytes);

class Pair {
 public:
  Pair(int self, int peer, net::Fd fd, std::string peer_address);

  void post_send(RequestId id, const void* data, size_t bytes, uint64_t tag);
  void post_recv(RequestId id, void* data, size_t bytes, uint64_t tag);

  // Move what the socket takes without blocking; completed requests are
  // appended to `done`. True if any byte moved.
  bool progress(std::vector<RequestId>& done);

  bool idle() const { return sends_.empty() && recvs_.empty(); }
  int fd() const { return fd_.get(); }
  void shutdown();
  std::string describe_pending() const;

 private:
  struct Op {
    RequestId id;
    char* data;
    size_t bytes;
    uint64_t tag;
    FrameHeader header;
    size_t header_done = 0;  // bytes of header sent / received
    size_t payload_done = 0;
  };

  bool progress_sends(std::vector<RequestId>& done);
  bool progress_recvs(std::vector<RequestId>& done);
  [[noreturn]] void lost(const char* doing, int err);
  std::string name() const;

  int self_;
  int peer_;
  net::Fd fd_;
  std::string peer_address_;
  std::deque<Op> sends_;
  std::deque<Op> recvs_;
  uint64_t received_messages_ = 0;
};

}  // namespace coll::transport::tcp
