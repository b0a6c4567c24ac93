// The nvlink transport: device buffers between the ranks of one node, read
// and written in place across processes (CUDA IPC) by the copy engine, over
// NVLink or PCIe, or within one GPU when several ranks share it.
//
// Every message is a rendezvous. The sender shares its buffer and posts a
// frame (a descriptor of 256 bytes) to the receiver; the receiver matches
// it against its receives in posting order, pulls the bytes straight into
// its buffer with one peer-to-peer copy, and answers with a done frame, on
// which the sender's request completes. Puts and gets are served by the
// target as it polls, the same way: it pulls a put into its registered
// memory, or pushes a get's bytes into the origin's buffer, then answers.
// So a message is one copy, and no device memory is set aside per pair.
//
// Frames travel over a shared-memory transport of the transport's own
// (given by the registry, so that no transport includes another's folder),
// which also finds peers that die or abort. The hardware
// is behind a Mover (mover.h): CUDA's, or an emulation for machines
// without a GPU.
//
// Device buffers only: the router sends host buffers by another transport
// (Capabilities::device_only).
#pragma once

#include "transport/nvlink/mover.h"
#include "transport/registry.h"
#include "transport/transport.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace coll::transport::nvlink {

struct Frame;
enum class FrameKind : uint32_t;

class NvlinkTransport final : public Transport {
 public:
  // `frames`: a transport between the ranks of this node for the frames,
  // used by nothing else (the registry makes it: shm).
  NvlinkTransport(const Context& context, std::unique_ptr<Transport> frames);
  ~NvlinkTransport() override;
  using Transport::post_recv;
  using Transport::post_send;

  const Capabilities& capabilities() const override { return caps_; }
  // "<the mover's address>@<the frames' shm address>".
  std::string local_address() const override;
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses, PairExchange& pairs,
               const Deadline& deadline) override;
  const Registration* register_memory(const void* data, size_t bytes, MemoryKind kind) override;
  void deregister(const Registration* registration) override;
  RequestId post_send(int peer, const Buffer& buffer, uint64_t tag) override;
  RequestId post_recv(int peer, const Buffer& buffer, uint64_t tag) override;
  RequestId post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                     const uint64_t* notify) override;
  RequestId post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset) override;
  RequestId post_notification(int peer, uint64_t* value) override;
  void poll(std::vector<RequestId>& done, int timeout_ms) override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string& peer_address) const override;

 private:
  struct Recv {
    RequestId id;
    Buffer buffer;
    uint64_t tag;
  };
  // A copy in flight, and what its end means.
  struct Copy {
    uint64_t copy;
    int peer;
    RequestId complete;   // a receive of ours, done once the answer is sent (0: none)
    uint64_t answer;      // the peer's request that our done frame answers
    bool notify = false;  // a put: its notification is due once it landed
    uint64_t value = 0;
  };
  struct Peer {
    bool connected = false;
    std::deque<Recv> recvs;                      // posted, unmatched
    std::deque<std::unique_ptr<Frame>> arrived;  // sends that came before their receive
    std::deque<std::pair<RequestId, uint64_t*>> notify_waits;
    std::deque<uint64_t> notifications;
    std::unique_ptr<Frame> inbound;  // the frame being received
    size_t awaiting = 0;             // our requests waiting for this peer's done frame
  };
  struct Region {
    Registration registration;
    int count = 1;
  };

  Peer& peer(int rank, const char* what);
  void check_kind(int peer, const Buffer& buffer, const char* what) const;
  void send_frame(int peer, const Frame& frame, RequestId then = 0);
  RequestId request(int peer, Frame frame, const Buffer& local, const char* what);
  RequestId one_sided(int peer, FrameKind kind, const Buffer& local, const RemoteMemory& remote, size_t offset,
                      const uint64_t* notify);
  void listen(int peer);
  void on_frame(int peer, std::unique_ptr<Frame> frame);
  void match(int peer, const Recv& recv, const Frame& frame);
  void serve(int peer, const Frame& frame);
  // Sends the done frame for `request`; `then` (ours) completes once the
  // frame is on its way, so that a rank whose receives are done never leaves
  // before its answers do.
  void answer(int peer, uint64_t request, Code code, const std::string& why, RequestId then = 0);
  void deliver(int peer, uint64_t value);
  uint64_t start_or_answer(int peer, uint64_t request, bool pull, void* local, const Shared& remote, size_t bytes);
  bool copy_done(const Copy& copy);
  void finish_copies();
  bool awaits(int peer) const;
  void fail_what_waits_on_the_gone();
  std::chrono::steady_clock::time_point next_check_{};  // of the peers that left

  Context context_;
  Capabilities caps_;
  std::unique_ptr<Mover> mover_;
  std::unique_ptr<Transport> frames_;  // shm
  std::vector<Peer> peers_;
  std::deque<Copy> copies_;
  std::map<uint64_t, Region> regions_;          // by id, which is also the handle
  std::unordered_map<RequestId, int> inbound_;  // shm request -> its peer
  struct Sending {
    std::unique_ptr<Frame> frame;
    RequestId then = 0;  // ours, complete once the frame is sent
  };
  std::map<RequestId, Sending> sending_;  // frames in flight, by shm request
  std::vector<RequestId> inner_done_;
  std::vector<RequestId> ready_;  // ours, done outside poll: reported at the next one
  RequestId next_ = 0;
  uint64_t next_region_ = 0;
  bool closed_ = false;
};

}  // namespace coll::transport::nvlink
