// Several transports behind one: each peer is served by the first transport
// (in COLL_TRANSPORTS order) that reaches it — shared memory for ranks on
// this node, TCP otherwise. The choice is by capability (Transport::reaches),
// never by a transport's name, and is logged per peer at INFO.
#pragma once

#include "transport/transport.h"

#include <memory>
#include <string>
#include <vector>

namespace coll {

class Router final : public transport::Transport {
 public:
  Router(int rank, std::vector<std::unique_ptr<transport::Transport>> transports);

  const transport::Capabilities& capabilities() const override { return caps_; }
  // Every transport's address, "<name>=<address>", and "host=<host id>",
  // joined by ';'.
  std::string local_address() const override;
  // The host id inside a router address ("" if it has none).
  static std::string host_of(const std::string& address);
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
               const Deadline& deadline) override;
  transport::RequestId post_send(int peer, const void* data, size_t bytes, uint64_t tag) override;
  transport::RequestId post_recv(int peer, void* data, size_t bytes, uint64_t tag) override;
  bool delivers_pieces_from(int peer) const override;
  transport::RequestId post_recv_sink(int peer, size_t bytes, uint64_t tag, const transport::Sink& sink) override;
  // One-sided access goes to the transport that serves the peer; a handle
  // comes from the first transport that has one for the memory.
  bool handle_for(const void* data, size_t bytes, transport::MemoryHandle* handle) const override;
  bool can_access(int peer) const override;
  char* access(int peer, const transport::MemoryHandle& handle, size_t bytes, Access how) override;
  // The board of the transport that serves every peer, once all are
  // connected (none where peers use different transports).
  size_t board_bytes() const override;
  uint32_t board_post(const BoardBlock& block, size_t bytes) override;
  bool board_wait(int peer, uint32_t round, uint64_t want_tag, int timeout_ms) override;
  BoardBlock board_block(int peer, uint32_t round) const override;
  void poll(std::vector<transport::RequestId>& done, int timeout_ms) override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string&) const override { return true; }

  // The slowest transport any pair of ranks will use: the last, in
  // preference order, that some peer needs ("shm" when all share this node).
  std::string slowest_for(const std::vector<std::string>& addresses) const;
  // The transport that would carry messages to `peer` at `address`.
  std::string transport_for(int peer, const std::string& address) const {
    return transports_[choose(peer, address)]->capabilities().name;
  }

 private:
  size_t choose(int peer, const std::string& address) const;
  bool routed(int peer) const;  // whether a connect chose `peer`'s transport
  transport::Transport& board() const;
  size_t route(int peer) const;

  int rank_;
  std::vector<std::unique_ptr<transport::Transport>> transports_;
  transport::Capabilities caps_;
  // Per peer rank: the index into transports_ of its route (kNoRoute before
  // the first connect) and whether its pair is up.
  static constexpr uint8_t kNoRoute = 0xff;
  std::vector<uint8_t> route_;
  std::vector<bool> connected_;
  uint8_t board_ = kNoRoute;  // the transport with the board, if one serves every peer
  // A request's id here is its transport's id times kMaxTransports plus the
  // transport's index, so no table maps one to the other.
  static constexpr transport::RequestId kMaxTransports = 8;
  std::vector<size_t> outstanding_;  // requests in flight, per transport
  std::vector<transport::RequestId> inner_done_;
};

// The transports COLL_TRANSPORTS names, in its order ("shm,tcp" by default).
std::vector<std::unique_ptr<transport::Transport>> make_transports(int rank, int nranks, const auth::Secret& secret,
                                                                   const std::string& job_tag);

// This node's identity: COLL_HOSTID, else hostname and boot id.
std::string host_id();

// Names a communicator's shared-memory segments: a hash of the job secret
// (never the secret) and the communicator's store prefix.
std::string segment_tag(const auth::Secret& secret, const std::string& prefix);

}  // namespace coll
