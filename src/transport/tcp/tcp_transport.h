// The TCP transport: one listening socket per rank, one authenticated
// connection per peer (the higher rank connects, the lower accepts), and one
// epoll progress engine over all pairs, driven by the caller's poll().
// Per pair, the acceptor hands the connector a fresh token through the
// pair exchange, which its proof must cover: a connection is bound to this
// communicator's pair, not only to the job. Puts and gets are emulated over
// the pair's stream (pair.h): the peer serves them while it polls.
#pragma once

#include "base/auth.h"
#include "base/socket.h"
#include "transport/registration_cache.h"
#include "transport/tcp/pair.h"
#include "transport/transport.h"

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <unordered_map>

namespace coll::transport::tcp {

class TcpTransport final : public Transport {
 public:
  TcpTransport(int rank, int nranks, const auth::Secret& secret, std::string host);
  ~TcpTransport() override;

  const Capabilities& capabilities() const override { return caps_; }
  std::string local_address() const override;
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses, PairExchange& pairs,
               const Deadline& deadline) override;
  using Transport::post_recv;
  using Transport::post_send;
  RequestId post_send(int peer, const Buffer& buffer, uint64_t tag) override;
  RequestId post_recv(int peer, const Buffer& buffer, uint64_t tag) override;
  // Host memory only; the handle is the registration's id in the cache.
  const Registration* register_memory(const void* data, size_t bytes, MemoryKind kind) override;
  void deregister(const Registration* registration) override;
  RequestId post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                     const uint64_t* notify) override;
  RequestId post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset) override;
  RequestId post_notification(int peer, uint64_t* value) override;
  void poll(std::vector<RequestId>& done, int timeout_ms) override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string&) const override { return true; }

 private:
  void connect_to_lower(int peer, const std::string& address, const std::string& token, const Deadline& deadline);
  static char* resolve(void* self, uint64_t registration, uint64_t offset, uint64_t bytes, std::string* why);
  // A connection accepted and greeted, whose proof of the secret is awaited.
  struct Greeted {
    net::Fd fd;
    net::SockAddr from;
    auth::Nonce nonce{};
    auth::ClientHello hello{};
    size_t got = 0;                                 // bytes of hello read so far
    std::chrono::steady_clock::time_point until{};  // when its silence ends it
  };
  void accept_from_higher(const std::vector<int>& waiting, const std::vector<std::string>& addresses,
                          PairExchange& pairs, const Deadline& deadline);
  void hear_newcomers(int timeout_ms, bool accept);
  void greet_newcomers();
  void out_of_descriptors(int error);
  bool hear_out(Greeted& g);
  bool drop(const Greeted& g, const std::string& why);
  void add_pair(int peer, net::Fd fd, const std::string& address);
  Pair& pair(int peer, const char* doing);

  int rank_;
  int nranks_;
  auth::Secret secret_;
  std::string host_;
  int64_t silence_ms_;  // COLL_TCP_SILENCE_MS
  std::chrono::steady_clock::time_point next_ack_check_{};
  Capabilities caps_;
  net::SockAddr address_;
  net::Fd listener_;
  net::Fd epoll_;
  std::map<int, std::unique_ptr<Pair>> pairs_;
  std::map<int, std::string> tokens_;  // the token handed to each higher peer
  RegistrationCache registrations_;
  bool serving_ = false;                // memory is registered: pairs read puts and gets as they come
  std::vector<Greeted> greeted_;        // handshakes under way
  std::vector<std::string> addresses_;  // every rank's, from the last connect
  std::unordered_map<int, Pair*> by_fd_;
  RequestId next_request_ = 1;
  std::atomic<bool> closed_{false};  // set by abort from any thread
};

}  // namespace coll::transport::tcp
