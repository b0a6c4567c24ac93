#include "bootstrap/store_server.h"

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/store_protocol.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace coll::bootstrap {

namespace {

constexpr int kHandshakeTimeoutMs = 10000;

struct Conn {
  net::Fd fd;
  std::string peer;
  bool authenticated = false;
  uint32_t identity = kStoreClientIdentity;  // a rank's first communicator: its rank
  bool said_bye = false;
  auth::Nonce nonce{};
  std::chrono::steady_clock::time_point opened = std::chrono::steady_clock::now();
  std::string in;
  std::string out;
  std::string waiting_key;  // a GET held until the key exists
};

std::string reply(uint32_t status, const std::string& value) {
  StoreReplyHeader h{status, 0, value.size()};
  return std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + value;
}

std::mutex& registry_mutex() {
  static auto* m = new std::mutex();
  return *m;
}
std::vector<StoreServer*>& registry() {
  static auto* r = new std::vector<StoreServer*>();  // never destroyed: see header
  return *r;
}

}  // namespace

StoreServer::StoreServer(net::Fd listener, net::SockAddr bound, const auth::Secret& secret)
    : listener_(std::move(listener)), bound_(bound), secret_(secret) {}

StoreServer* StoreServer::start(const net::SockAddr& bind_addr, const auth::Secret& secret) {
  net::SockAddr bound;
  net::Fd listener = net::listen_on(bind_addr, &bound, "bootstrap store");
  return start_on(std::move(listener), bound, secret);
}

StoreServer* StoreServer::start_on(net::Fd listener, const net::SockAddr& bound, const auth::Secret& secret) {
  auto* server = new StoreServer(std::move(listener), bound, secret);
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().push_back(server);
  }
  std::thread([server] { server->run(); }).detach();
  log::info(log::kBoot, "bootstrap store listening on ", bound.to_string());
  return server;
}

void StoreServer::run() {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    log::warn(log::kBoot, "bootstrap store: epoll_create1 failed: ", std::strerror(errno));
    finished_ = true;
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener_.get();
  epoll_ctl(ep, EPOLL_CTL_ADD, listener_.get(), &ev);

  std::map<int, std::unique_ptr<Conn>> conns;
  std::map<std::string, std::string> data;
  int byes = 0;
  int gone = 0;  // ranks whose first communicator left without a goodbye: they died
  int expected_byes = -1;

  auto close_conn = [&](int fd, const std::string& why) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    if (!why.empty()) log::warn(log::kBoot, "bootstrap store: closing connection from ", it->second->peer, ": ", why);
    const Conn& c = *it->second;
    if (c.authenticated && c.identity != kStoreClientIdentity && !c.said_bye) {
      ++gone;
      log::info(log::kBoot, "bootstrap store: rank ", c.identity, " left without a goodbye (did it die?)");
    }
    epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
    conns.erase(it);
  };
  auto want_write = [&](Conn& c) {
    epoll_event e{};
    e.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<unsigned>(EPOLLOUT));
    e.data.fd = c.fd.get();
    epoll_ctl(ep, EPOLL_CTL_MOD, c.fd.get(), &e);
  };
  auto flush = [&](Conn& c) -> bool {
    while (!c.out.empty()) {
      ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0)
        c.out.erase(0, static_cast<size_t>(n));
      else if (n < 0 && (errno == EAGAIN || errno == EINTR))
        break;
      else
        return false;
    }
    want_write(c);
    return true;
  };
  auto serve_waiters = [&](const std::string& key) {
    for (auto& [fd, c] : conns) {
      if (c->waiting_key == key) {
        c->waiting_key.clear();
        c->out += reply(0, data[key]);
        flush(*c);
      }
    }
  };

  // Parses as many complete frames as `c.in` holds. False: drop the connection.
  auto process = [&](Conn& c, std::string* why) -> bool {
    if (!c.authenticated) {
      if (c.in.size() < sizeof(auth::ClientHello)) return true;
      auth::ClientHello hello;
      std::memcpy(&hello, c.in.data(), sizeof(hello));
      c.in.erase(0, sizeof(hello));
      if (!auth::check_client_hello(hello, secret_, kStorePurpose, c.nonce)) {
        *why = "it failed to prove it knows the job secret";
        return false;
      }
      auto proof = auth::make_server_proof(secret_, kStorePurpose, hello.identity, hello.nonce);
      c.out.append(reinterpret_cast<const char*>(&proof), sizeof(proof));
      c.authenticated = true;
      c.identity = hello.identity;
    }
    StoreRequest request;
    while (c.waiting_key.empty()) {
      const Parse parsed = take_request(c.in, &request, why);
      if (parsed == Parse::kBad) return false;
      if (parsed == Parse::kNeedMore) break;
      const std::string& key = request.key;
      const std::string& value = request.value;
      switch (request.op) {
        case StoreOp::kSet:
          data[key] = value;
          c.out += reply(0, "");
          serve_waiters(key);
          break;
        case StoreOp::kGet:
          if (data.count(key))
            c.out += reply(0, data[key]);
          else
            c.waiting_key = key;
          break;
        case StoreOp::kAdd: {
          int64_t delta, sum = 0;
          std::memcpy(&delta, value.data(), sizeof(delta));
          if (data.count(key) && data[key].size() == sizeof(sum)) std::memcpy(&sum, data[key].data(), sizeof(sum));
          sum += delta;
          data[key].assign(reinterpret_cast<const char*>(&sum), sizeof(sum));
          c.out += reply(0, data[key]);
          serve_waiters(key);
          break;
        }
        case StoreOp::kBye: {
          int32_t nranks = 0;
          if (value.size() == sizeof(nranks)) std::memcpy(&nranks, value.data(), sizeof(nranks));
          expected_byes = nranks;
          ++byes;
          c.said_bye = true;
          c.out += reply(0, "");
          break;
        }
      }
    }
    return true;
  };

  std::vector<epoll_event> events(64);
  // Until every rank said goodbye, or died: a dead rank must not keep the
  // store (its thread, socket and connections) alive in the survivors.
  while (!stopping_ && !(expected_byes > 0 && byes + gone >= expected_byes)) {
    int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 500);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listener_.get()) {
        for (;;) {
          sockaddr_storage ss{};
          socklen_t len = sizeof(ss);
          int cfd = accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd < 0) break;
          auto c = std::make_unique<Conn>();
          c->fd = net::Fd(cfd);
          net::SockAddr peer;
          peer.storage = ss;
          peer.length = len;
          c->peer = peer.to_string();
          c->nonce = auth::random_nonce();
          auto hello = auth::make_server_hello(c->nonce);
          c->out.append(reinterpret_cast<const char*>(&hello), sizeof(hello));
          epoll_event e{};
          e.events = EPOLLIN;
          e.data.fd = cfd;
          epoll_ctl(ep, EPOLL_CTL_ADD, cfd, &e);
          Conn& ref = *c;
          conns[cfd] = std::move(c);
          if (!flush(ref)) close_conn(cfd, "");
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      if (events[i].events & EPOLLOUT) {
        if (!flush(c)) {
          close_conn(fd, "");
          continue;
        }
      }
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        char buf[65536];
        bool closed = false;
        for (;;) {
          ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
          if (r > 0) {
            c.in.append(buf, static_cast<size_t>(r));
            if (c.in.size() > kMaxValueBytes + kMaxKeyBytes + 64) break;  // parse before reading more
          } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
            closed = true;
            break;
          } else if (errno == EAGAIN) {
            break;
          }
        }
        std::string why;
        if (!process(c, &why)) {
          close_conn(fd, why);
          continue;
        }
        if (closed) {
          // One that leaves mid-handshake is a stranger or a port scan: say
          // so once. One that leaves without a byte is most likely
          // coll_comm_shrink probing whether this host is alive: not a warning.
          if (!c.authenticated && c.in.empty())
            log::info(log::kBoot, "bootstrap store: ", c.peer, " connected and left without a word (a probe)");
          close_conn(fd, c.authenticated || c.in.empty() ? "" : "closed before authenticating");
          continue;
        }
        if (!flush(c)) close_conn(fd, "");
      }
    }
    // Silent strangers must not hold a slot forever.
    auto now = std::chrono::steady_clock::now();
    std::vector<int> stale;
    for (auto& [fd, c] : conns)
      if (!c->authenticated && now - c->opened > std::chrono::milliseconds(kHandshakeTimeoutMs)) stale.push_back(fd);
    for (int fd : stale) close_conn(fd, "no handshake within 10 s");
  }
  log::info(log::kBoot, "bootstrap store on ", bound_.to_string(), " finished (", byes, " ranks said bye, ", gone,
            " left without)");
  conns.clear();
  ::close(ep);
  listener_.reset();
  finished_ = true;
}

}  // namespace coll::bootstrap
