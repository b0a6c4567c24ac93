#include "transport/tcp/tcp_transport.h"

#include "core/error.h"
#include "core/log.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

namespace coll::transport {

std::unique_ptr<Transport> make_tcp_transport(int rank, int nranks, const auth::Secret& secret,
                                              const std::string& host) {
  return std::make_unique<tcp::TcpTransport>(rank, nranks, secret, host);
}

namespace tcp {
namespace {

// The purpose string binds a connection to its target rank, so that a proof
// made for one rank cannot be replayed to another.
std::string purpose_for(int target) { return str_cat("tcp>", target); }

// How long a silent stranger may hold the accept loop per attempt.
constexpr int kHandshakeSliceMs = 2000;

// An address is "<ip>:<port>", then "|<host id>" when the host is known.
std::string socket_part(const std::string& address) { return address.substr(0, address.find('|')); }

// How errors name a peer: "host <id>, <ip>:<port>".
std::string describe(const std::string& address) {
  const size_t bar = address.find('|');
  if (bar == std::string::npos) return address;
  return str_cat("host ", address.substr(bar + 1), ", ", address.substr(0, bar));
}

}  // namespace

TcpTransport::TcpTransport(int rank, int nranks, const auth::Secret& secret, std::string host)
    : rank_(rank), nranks_(nranks), secret_(secret), host_(std::move(host)) {
  caps_.name = "tcp";
  caps_.latency_us = 30;
  caps_.bandwidth_gbps = 1.0;
  std::string ifname;
  net::SockAddr addr = net::choose_interface(&ifname);
  listener_ = net::listen_on(addr, &address_, "tcp transport");
  epoll_ = net::Fd(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) fail_errno(Code::kSystem, errno, "tcp transport", "epoll_create1");
  log::info(log::kNet, "tcp: rank ", rank_, " listening on ", address_.to_string(), " (", ifname, ")");
}

TcpTransport::~TcpTransport() = default;

std::string TcpTransport::local_address() const {
  return host_.empty() ? address_.to_string() : str_cat(address_.to_string(), "|", host_);
}

void TcpTransport::add_pair(int peer, net::Fd fd, const std::string& address) {
  net::set_nonblocking(fd.get());
  net::set_nodelay(fd.get());
  int raw = fd.get();
  auto p = std::make_unique<Pair>(rank_, peer, std::move(fd), address);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
  ev.data.fd = raw;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, raw, &ev) < 0)
    fail_errno(Code::kSystem, errno, str_cat("tcp: adding rank ", peer), "epoll_ctl");
  by_fd_[raw] = p.get();
  pairs_[peer] = std::move(p);
  log::info(log::kNet, "tcp: rank ", rank_, " connected to rank ", peer, " at ", address);
}

void TcpTransport::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                           const Deadline& deadline) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": tcp transport was closed (abort)");
  std::vector<int> higher;
  for (int peer : peers) {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      fail(Code::kInternal, "tcp: rank ", rank_, " asked to connect to rank ", peer);
    if (pairs_.count(peer)) continue;
    if (peer < rank_)
      connect_to_lower(peer, addresses.at(static_cast<size_t>(peer)), deadline);
    else
      higher.push_back(peer);
  }
  accept_from_higher(higher, addresses, deadline);
}

void TcpTransport::connect_to_lower(int peer, const std::string& address, const Deadline& deadline) {
  std::string what = str_cat("rank ", peer, " (", describe(address), ")");
  net::SockAddr addr = net::SockAddr::parse(socket_part(address), "peer address");
  net::Fd fd = net::connect_to(addr, deadline, what);
  auth::client_handshake(fd.get(), secret_, purpose_for(peer), static_cast<uint32_t>(rank_), deadline, what);
  add_pair(peer, std::move(fd), describe(address));
}

// Accepts until every rank in `waiting` is connected. Each candidate must
// prove the secret within kHandshakeSliceMs, so a silent stranger delays the
// job by at most that, once.
void TcpTransport::accept_from_higher(const std::vector<int>& waiting, const std::vector<std::string>& addresses,
                                      const Deadline& deadline) {
  auto missing = [&] {
    for (int p : waiting)
      if (!pairs_.count(p)) return p;
    return -1;
  };
  while (missing() >= 0) {
    pollfd pfd{listener_.get(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, deadline.remaining_ms(1000));
    if (rc < 0 && errno != EINTR) fail_errno(Code::kSystem, errno, "tcp accept", "poll");
    if (rc <= 0) {
      if (deadline.expired())
        fail(Code::kTimeout, "rank ", rank_, ": timed out after ", deadline.budget_ms(),
             " ms (COLL_TIMEOUT_MS) waiting for rank ", missing(), " to connect");
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    net::Fd fd(accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) continue;
    net::SockAddr from;
    from.storage = ss;
    from.length = len;
    auto slice = Deadline::after_ms(std::min<int64_t>(kHandshakeSliceMs, deadline.remaining_ms() + 1));
    try {
      auth::Nonce nonce = auth::random_nonce();
      auto hello = auth::make_server_hello(nonce);
      net::send_all(fd.get(), &hello, sizeof(hello), slice, from.to_string());
      auth::ClientHello client{};
      net::recv_all(fd.get(), &client, sizeof(client), slice, from.to_string());
      int claimed = static_cast<int>(client.identity);
      bool ok =
          claimed > rank_ && claimed < nranks_ && auth::check_client_hello(client, secret_, purpose_for(rank_), nonce);
      if (!ok) {
        log::warn(log::kNet, "tcp: rank ", rank_, " refused a connection from ", from.to_string(),
                  ": it did not prove it knows the job secret");
        continue;
      }
      auto proof = auth::make_server_proof(secret_, purpose_for(rank_), client.identity, client.nonce);
      net::send_all(fd.get(), &proof, sizeof(proof), slice, from.to_string());
      if (pairs_.count(claimed)) {
        log::warn(log::kNet, "tcp: rank ", rank_, " got a second connection claiming rank ", claimed, "; dropped");
        continue;
      }
      add_pair(claimed, std::move(fd), describe(addresses.at(static_cast<size_t>(claimed))));
    } catch (const Error& e) {
      log::warn(log::kNet, "tcp: rank ", rank_, " dropped a connection from ", from.to_string(), ": ", e.what());
    }
  }
}

Pair& TcpTransport::pair(int peer, const char* doing) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": tcp transport was closed (abort)");
  auto it = pairs_.find(peer);
  if (it == pairs_.end())
    fail(Code::kInternal, "tcp: rank ", rank_, " ", doing, " rank ", peer, " without a connection");
  return *it->second;
}

RequestId TcpTransport::post_send(int peer, const void* data, size_t bytes, uint64_t tag) {
  RequestId id = next_request_++;
  pair(peer, "sends to").post_send(id, data, bytes, tag);
  return id;
}

RequestId TcpTransport::post_recv(int peer, void* data, size_t bytes, uint64_t tag) {
  RequestId id = next_request_++;
  pair(peer, "receives from").post_recv(id, data, bytes, tag);
  return id;
}

void TcpTransport::poll(std::vector<RequestId>& done, int timeout_ms) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": tcp transport was closed (abort)");
  // Try every busy pair first: with edge-triggered epoll, readiness that
  // arrived while no operation was posted is only seen by trying.
  size_t before = done.size();
  bool moved = false;
  for (auto& [peer, p] : pairs_)
    if (!p->idle()) moved = p->progress(done) || moved;
  if (moved || done.size() > before || timeout_ms == 0) return;

  epoll_event events[64];
  int n = epoll_wait(epoll_.get(), events, 64, timeout_ms);
  if (n < 0 && errno != EINTR) fail_errno(Code::kSystem, errno, "tcp progress", "epoll_wait");
  for (int i = 0; i < n; ++i) {
    auto it = by_fd_.find(events[i].data.fd);
    if (it != by_fd_.end() && !it->second->idle()) it->second->progress(done);
  }
}

std::string TcpTransport::pending_with(int peer) const {
  auto it = pairs_.find(peer);
  return it == pairs_.end() ? str_cat("no connection to rank ", peer) : it->second->describe_pending();
}

void TcpTransport::close(const Error* why) {
  for (auto& [peer, p] : pairs_) p->shutdown(why);
  closed_ = true;
}

}  // namespace tcp
}  // namespace coll::transport
