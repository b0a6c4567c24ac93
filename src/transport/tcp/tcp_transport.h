// The TCP transport: one listening socket per rank, one authenticated
// connection per peer (the higher rank connects, the lower accepts), and one
// epoll progress engine over all pairs, driven by the caller's poll().
#pragma once

#include "base/socket.h"
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
  void connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
               const Deadline& deadline) override;
  RequestId post_send(int peer, const void* data, size_t bytes, uint64_t tag) override;
  RequestId post_recv(int peer, void* data, size_t bytes, uint64_t tag) override;
  void poll(std::vector<RequestId>& done, int timeout_ms) override;
  std::string pending_with(int peer) const override;
  void close(const Error* why) override;
  bool reaches(const std::string&) const override { return true; }

 private:
  void connect_to_lower(int peer, const std::string& address, const Deadline& deadline);
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
                          const Deadline& deadline);
  void hear_newcomers(int timeout_ms, bool accept);
  void greet_newcomers();
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
  std::vector<Greeted> greeted_;        // handshakes under way
  std::vector<std::string> addresses_;  // every rank's, from the last connect
  std::unordered_map<int, Pair*> by_fd_;
  RequestId next_request_ = 1;
  std::atomic<bool> closed_{false};  // set by abort from any thread
};

}  // namespace coll::transport::tcp
