// Several transports behind one: each peer is served by the first transport
// (in COLL_TRANSPORTS order) that reaches it — shared memory for ranks on
// this node, TCP otherwise. Device buffers go by the first transport that
// moves GPU memory and reaches the peer (nvlink), where there is one; a
// transport that moves only device buffers never carries host ones. The choice is by capability (Transport::reaches),
// never by a transport's name, and is logged per peer at INFO.
#pragma once

#include "transport/transport.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace coll {

class Router final : public transport::Transport, public transport::PeerAccess {
 public:
  Router(int rank, std::vector<std::unique_ptr<transport::Transport>> transports);
  using transport::Transport::post_recv;
  using transport::Transport::post_send;

  const transport::Capabilities& capabilities() const override { return caps_; }
  // Every transport's address, "<name>=<address>", and "host=<host id>",
  // joined by ';'.
  std::string local_address() const override;
  // The host id inside a router address ("" if it has none).
  static std::string host_of(const std::string& address);
  // Each transport's per-pair data goes through `pairs` under its name.
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses, transport::PairExchange& pairs,
               const Deadline& deadline) override;
  transport::RequestId post_send(int peer, const transport::Buffer& buffer, uint64_t tag) override;
  transport::RequestId post_recv(int peer, const transport::Buffer& buffer, uint64_t tag) override;
  bool delivers_pieces_from(int peer) const override;
  transport::RequestId post_recv_sink(int peer, size_t bytes, uint64_t tag, const transport::Sink& sink) override;
  // A registration with every transport that registers memory of that
  // kind; null when none does. Its handle is the first one's: a peer needs
  // the handle of the transport that serves it (handle_for_peer).
  const transport::Registration* register_memory(const void* data, size_t bytes, transport::MemoryKind kind) override;
  void deregister(const transport::Registration* registration) override;
  transport::MemoryHandle handle_for_peer(const transport::Registration* registration, int peer) const;
  // One-sided operations go to the transport that serves the peer.
  transport::RequestId post_put(int peer, const transport::Buffer& local, const transport::RemoteMemory& remote,
                                size_t offset, const uint64_t* notify) override;
  transport::RequestId post_get(int peer, const transport::Buffer& local, const transport::RemoteMemory& remote,
                                size_t offset) override;
  transport::RequestId post_notification(int peer, uint64_t* value) override;
  // Peer access goes to the transport that serves the peer; a handle comes
  // from the first transport that has one for the memory.
  transport::PeerAccess* peer_access() override { return this; }
  bool handle_for(const void* data, size_t bytes, transport::MemoryHandle* handle) const override;
  bool can_access(int peer) const override;
  char* access(int peer, const transport::MemoryHandle& handle, size_t bytes, Access how) override;
  // The board of the transport that serves every peer, once all are
  // connected (none where peers use different transports).
  transport::Board* board() override;
  void poll(std::vector<transport::RequestId>& done, int timeout_ms) override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string&) const override { return true; }

  // The slowest transport any pair of ranks will use: the last, in
  // preference order, that some peer needs.
  const transport::Capabilities& slowest_for(const std::vector<std::string>& addresses) const;
  // The transport that would carry messages to `peer` at `address`.
  const transport::Capabilities& transport_for(int peer, const std::string& address) const {
    return transports_[choose(peer, address)]->capabilities();
  }
  // Whether device buffers to `peer` at `address` go by a transport that
  // moves GPU memory (else they must be staged through host memory).
  bool moves_device_to(int peer, const std::string& address) const { return choose(peer, address, true) != kNoRoute; }
  // The transport that would carry device buffers to `peer`; null where
  // none moves them.
  const transport::Capabilities* device_transport_for(int peer, const std::string& address) const {
    const size_t i = choose(peer, address, true);
    return i == kNoRoute ? nullptr : &transports_[i]->capabilities();
  }
  // Every transport's capabilities, in preference order.
  std::vector<const transport::Capabilities*> all_capabilities() const;

 private:
  // The first transport that reaches `peer` for host buffers (throws when
  // none does), or for device buffers (kNoRoute when none moves them).
  size_t choose(int peer, const std::string& address, bool device = false) const;
  bool routed(int peer) const;  // whether a connect chose `peer`'s transport
  size_t route(int peer, MemoryKind kind = MemoryKind::kHost) const;
  transport::RequestId outer(transport::RequestId inner, size_t i) {
    ++outstanding_[i];
    return inner * kMaxTransports + i;
  }
  // The registration of transport i inside one of ours (null: none).
  transport::Buffer inner_buffer(const transport::Buffer& buffer, size_t i) const;

  int rank_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  transport::Capabilities caps_;
  // Per peer rank: the index into transports_ of its route (kNoRoute before
  // the first connect) and whether its pair is up.
  static constexpr uint8_t kNoRoute = 0xff;
  std::vector<uint8_t> route_;
  std::vector<uint8_t> device_route_;  // for device buffers: a transport that moves them, else route_'s
  std::vector<bool> connected_;
  uint8_t board_ = kNoRoute;  // the transport with the board, if one serves every peer
  // A request's id here is its transport's id times kMaxTransports plus the
  // transport's index, so no table maps one to the other.
  static constexpr transport::RequestId kMaxTransports = 8;
  std::vector<size_t> outstanding_;  // requests in flight, per transport
  std::vector<transport::RequestId> inner_done_;
  // Our registrations: one per transport that made one (null where not).
  struct Composite {
    transport::Registration outer;
    int count = 1;
    std::vector<const transport::Registration*> inner;
  };
  std::map<const transport::Registration*, std::unique_ptr<Composite>> registrations_;
};

}  // namespace coll
