#include "transport/tcp/tcp_transport.h"

#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

namespace coll::transport {

namespace tcp {
namespace {

// The purpose string binds a connection to its target rank and the pair's
// token, so that a proof made for one rank, or for another communicator's
// pair, cannot be replayed here.
std::string purpose_for(int target, const std::string& token) { return str_cat("tcp>", target, "/", token); }

// How long a silent stranger may hold its place in the accept loop, and how
// many may: a flood of them waits in the listen queue, not in our files.
constexpr int kHandshakeSliceMs = 2000;
constexpr size_t kMaxGreeted = 128;

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
    : rank_(rank),
      nranks_(nranks),
      secret_(secret),
      host_(std::move(host)),
      silence_ms_(config::get_int("COLL_TCP_SILENCE_MS")) {
  if (silence_ms_ < 0 || (silence_ms_ > 0 && silence_ms_ < 2000))
    fail(Code::kInvalidArgument, "COLL_TCP_SILENCE_MS=", silence_ms_,
         ": give 0 (off) or at least 2000 ms (a silence shorter than a few retransmissions is a lost packet)");
  caps_.name = "tcp";
  caps_.one_sided = false;  // emulated: the peer's poll serves puts and gets
  // The model's defaults for TCP (docs/PERFORMANCE.md, "The cost model's defaults").
  caps_.link = LinkParameters{15.0, 0.63, 512 << 10};
  std::string ifname;
  net::SockAddr addr = net::choose_interface(&ifname);
  listener_ = net::listen_on(addr, &address_, "tcp transport");
  listener_.parents_only();
  epoll_ = net::Fd(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) fail_errno(Code::kSystem, errno, "tcp transport", "epoll_create1");
  log::info(log::kNet, "tcp: rank ", rank_, " listening on ", address_.to_string(), " (", ifname, ")");
}

TcpTransport::~TcpTransport() = default;

std::string TcpTransport::local_address() const {
  return host_.empty() ? address_.to_string() : str_cat(address_.to_string(), "|", host_);
}

void TcpTransport::add_pair(int peer, net::Fd fd, const std::string& address) {
  fd.parents_only();
  net::set_nonblocking(fd.get());
  net::set_nodelay(fd.get());
  int raw = fd.get();
  auto p = std::make_unique<Pair>(rank_, peer, std::move(fd), address, silence_ms_);
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
  ev.data.fd = raw;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, raw, &ev) < 0)
    fail_errno(Code::kSystem, errno, str_cat("tcp: adding rank ", peer), "epoll_ctl");
  by_fd_[raw] = p.get();
  if (serving_) p->serve(&TcpTransport::resolve, this);
  pairs_[peer] = std::move(p);
  log::info(log::kNet, "tcp: rank ", rank_, " connected to rank ", peer, " at ", address);
}

// Tokens first, for every higher peer, so that no rank waits on another's
// token while that one waits on its own.
void TcpTransport::connect(const std::vector<int>& peers, const std::vector<std::string>& addresses,
                           PairExchange& pairs, const Deadline& deadline) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": tcp transport was closed (abort)");
  std::vector<int> lower, higher;
  for (int peer : peers) {
    if (peer < 0 || peer >= nranks_ || peer == rank_)
      fail(Code::kInternal, "tcp: rank ", rank_, " asked to connect to rank ", peer);
    std::vector<int>& side = peer < rank_ ? lower : higher;
    // A ring of two names its one peer twice.
    if (pairs_.count(peer) || std::find(side.begin(), side.end(), peer) != side.end()) continue;
    side.push_back(peer);
  }
  for (int peer : higher) {
    if (!tokens_.count(peer)) tokens_[peer] = auth::to_hex(auth::random_secret()).substr(0, 32);
    pairs.publish(peer, tokens_[peer]);
  }
  for (int peer : lower)
    connect_to_lower(peer, addresses.at(static_cast<size_t>(peer)), pairs.fetch(peer, deadline), deadline);
  accept_from_higher(higher, addresses, pairs, deadline);
}

void TcpTransport::connect_to_lower(int peer, const std::string& address, const std::string& token,
                                    const Deadline& deadline) {
  std::string what = str_cat("rank ", peer, " (", describe(address), ")");
  net::SockAddr addr = net::SockAddr::parse(socket_part(address), "peer address");
  // Its listener was up before it published the address: a refusal means
  // its process has ended (or closed its communicator), not that it is late.
  net::Fd fd = net::connect_to(addr, deadline, what, net::Refused::kFail);
  fd.parents_only();
  auth::client_handshake(fd.get(), secret_, purpose_for(peer, token), static_cast<uint32_t>(rank_), deadline, what);
  add_pair(peer, std::move(fd), describe(address));
}

// Accepts until every rank in `waiting` is connected. Connections are
// greeted as they come and their answers read as they arrive, side by side:
// a silent stranger holds only its own place, for kHandshakeSliceMs, and a
// rank behind it in the queue gets in at once. A handshake still under way
// when we return (a rank we do not wait for yet) goes on in poll(). The
// ranks still missing are looked at now and then, one a look, in turn
// (Looks): one that died before connecting fails the wait at once.
void TcpTransport::accept_from_higher(const std::vector<int>& waiting, const std::vector<std::string>& addresses,
                                      PairExchange& pairs, const Deadline& deadline) {
  addresses_ = addresses;
  auto missing = [&](size_t from) {  // the first at or after `from`, in turn
    for (size_t k = 0; k < waiting.size(); ++k) {
      const int p = waiting[(from + k) % waiting.size()];
      if (!pairs_.count(p)) return p;
    }
    return -1;
  };
  Looks looks;
  size_t turn = 0;
  while (missing(0) >= 0) {
    if (deadline.expired())
      fail(Code::kTimeout, "rank ", rank_, ": timed out after ", deadline.budget_ms(), " ms (", deadline.setting(),
           ") waiting for rank ", missing(0), " to connect");
    if (looks.due()) {
      const int peer = missing(turn++);
      if (pairs.gone(peer))
        fail(Code::kRemote, "rank ", rank_, ": rank ", peer, " (", describe(addresses.at(static_cast<size_t>(peer))),
             ") is gone (its communicator's standby socket refuses connections) while we waited for it to connect");
    }
    hear_newcomers(deadline.remaining_ms(100), true);
  }
}

// One look at the handshakes under way (and, with `accept`, at the
// listener while fewer than kMaxGreeted are), waiting up to timeout_ms for
// any of them to move.
void TcpTransport::hear_newcomers(int timeout_ms, bool accept) {
  accept = accept && greeted_.size() < kMaxGreeted;
  std::vector<pollfd> fds;
  if (accept) fds.push_back({listener_.get(), POLLIN, 0});
  const size_t first = fds.size();
  for (const Greeted& g : greeted_) fds.push_back({g.fd.get(), POLLIN, 0});
  int rc = ::poll(fds.data(), fds.size(), timeout_ms);
  if (rc < 0 && errno != EINTR) fail_errno(Code::kSystem, errno, "tcp accept", "poll");
  const size_t heard = greeted_.size();  // those polled; newcomers are appended after them
  if (accept && fds[0].revents != 0) greet_newcomers();
  const auto now = std::chrono::steady_clock::now();
  for (size_t k = heard; k-- > 0;) {
    Greeted& g = greeted_[k];
    const bool ready = fds[first + k].revents != 0;
    if ((ready && hear_out(g)) || (!ready && now >= g.until && drop(g, "it said nothing in time")))
      greeted_.erase(greeted_.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

// Accepts what waits, up to kMaxGreeted under way, and sends each our
// hello (a fresh socket's buffer always takes it whole).
void TcpTransport::greet_newcomers() {
  while (greeted_.size() < kMaxGreeted) {
    Greeted g;
    socklen_t len = sizeof(g.from.storage);
    g.fd = net::Fd(
        accept4(listener_.get(), reinterpret_cast<sockaddr*>(&g.from.storage), &len, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!g.fd.valid()) return out_of_descriptors(errno);
    g.fd.parents_only();
    g.from.length = len;
    g.nonce = auth::random_nonce();
    g.until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHandshakeSliceMs);
    auto hello = auth::make_server_hello(g.nonce);
    if (::send(g.fd.get(), &hello, sizeof(hello), MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof(hello))) {
      drop(g, "it left before our greeting");
      continue;
    }
    greeted_.push_back(std::move(g));
  }
}

// Out of descriptors the connection stays in the backlog and the listener
// readable: waiting would spin until the timeout, and then blame the peer.
void TcpTransport::out_of_descriptors(int error) {
  if (!net::out_of_descriptors(error)) return;
  const std::string advice =
      error == EMFILE
          ? str_cat(net::descriptor_limit(), "; a rank holds one connection to each peer over tcp): raise it")
      : error == ENFILE ? std::string("the system's limit, fs.file-max): raise it or end what holds them")
                        : std::string("the kernel is out of memory for sockets)");
  fail(Code::kSystem, "rank ", rank_, ": tcp cannot accept a peer's connection: ", std::strerror(error), " (", advice);
}

// Reads what the newcomer sent. True when it is done with: a rank that
// proved the secret (now a pair), or a stranger dropped.
bool TcpTransport::hear_out(Greeted& g) {
  auto* into = reinterpret_cast<char*>(&g.hello) + g.got;
  ssize_t n = ::recv(g.fd.get(), into, sizeof(g.hello) - g.got, MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n <= 0) return drop(g, "it closed the connection before proving the job secret");
  g.got += static_cast<size_t>(n);
  if (g.got < sizeof(g.hello)) return false;
  const int claimed = static_cast<int>(g.hello.identity);
  auto token = tokens_.find(claimed);
  if (claimed <= rank_ || claimed >= nranks_ || token == tokens_.end() ||
      !auth::check_client_hello(g.hello, secret_, purpose_for(rank_, token->second), g.nonce))
    return drop(g, "it did not prove it knows the job secret and this pair's token");
  if (pairs_.count(claimed)) return drop(g, str_cat("rank ", claimed, " is connected already"));
  auto proof = auth::make_server_proof(secret_, purpose_for(rank_, token->second), g.hello.identity, g.hello.nonce);
  try {
    net::send_all(g.fd.get(), &proof, sizeof(proof), Deadline::after_ms(kHandshakeSliceMs), g.from.to_string());
  } catch (const Error& e) {
    return drop(g, e.what());
  }
  add_pair(claimed, std::move(g.fd), describe(addresses_.at(static_cast<size_t>(claimed))));
  return true;
}

// Said once per connection, at warn: a stranger or a port scan.
bool TcpTransport::drop(const Greeted& g, const std::string& why) {
  log::warn(log::kNet, "tcp: rank ", rank_, " refused a connection from ", g.from.to_string(), ": ", why);
  return true;
}

Pair& TcpTransport::pair(int peer, const char* doing) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": tcp transport was closed (abort)");
  auto it = pairs_.find(peer);
  if (it == pairs_.end())
    fail(Code::kInternal, "tcp: rank ", rank_, " ", doing, " rank ", peer, " without a connection");
  return *it->second;
}

RequestId TcpTransport::post_send(int peer, const Buffer& buffer, uint64_t tag) {
  RequestId id = next_request_++;
  pair(peer, "sends to").post_send(id, buffer.data, buffer.bytes, tag);
  return id;
}

RequestId TcpTransport::post_recv(int peer, const Buffer& buffer, uint64_t tag) {
  RequestId id = next_request_++;
  pair(peer, "receives from").post_recv(id, buffer.data, buffer.bytes, tag);
  return id;
}

const Registration* TcpTransport::register_memory(const void* data, size_t bytes, MemoryKind kind) {
  if (kind != MemoryKind::kHost) return nullptr;
  const Registration* r = registrations_.acquire(
      data, bytes, kind, [](Registration& out, uint64_t id) { std::memcpy(out.handle.bytes.data(), &id, sizeof(id)); });
  for (auto& [peer, p] : pairs_) p->serve(&TcpTransport::resolve, this);
  serving_ = true;
  return r;
}

void TcpTransport::deregister(const Registration* registration) { registrations_.release(registration); }

char* TcpTransport::resolve(void* self, uint64_t registration, uint64_t offset, uint64_t bytes, std::string* why) {
  const Registration* r = static_cast<TcpTransport*>(self)->registrations_.find(registration);
  if (r == nullptr) {
    *why = "no such registration here (deregistered, or never made)";
    return nullptr;
  }
  if (offset > r->bytes || bytes > r->bytes - offset) {
    *why = str_cat("out of its ", r->bytes, " bytes");
    return nullptr;
  }
  return static_cast<char*>(const_cast<void*>(r->base)) + offset;
}

namespace {
uint64_t registration_id(const RemoteMemory& remote) {
  uint64_t id = 0;
  std::memcpy(&id, remote.handle.bytes.data(), sizeof(id));
  return id;
}
}  // namespace

RequestId TcpTransport::post_put(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset,
                                 const uint64_t* notify) {
  check_remote_range(caps_, rank_, peer, true, local.bytes, offset, remote);
  RequestId id = next_request_++;
  pair(peer, "puts to").post_put(id, local.data, local.bytes, registration_id(remote), offset, notify);
  return id;
}

RequestId TcpTransport::post_get(int peer, const Buffer& local, const RemoteMemory& remote, size_t offset) {
  check_remote_range(caps_, rank_, peer, false, local.bytes, offset, remote);
  RequestId id = next_request_++;
  pair(peer, "gets from").post_get(id, local.data, local.bytes, registration_id(remote), offset);
  return id;
}

RequestId TcpTransport::post_notification(int peer, uint64_t* value) {
  RequestId id = next_request_++;
  pair(peer, "waits for a notification from").post_notification(id, value);
  return id;
}

void TcpTransport::poll(std::vector<RequestId>& done, int timeout_ms) {
  if (closed_) fail(Code::kInvalidUsage, "rank ", rank_, ": tcp transport was closed (abort)");
  // Try every busy pair first: with edge-triggered epoll, readiness that
  // arrived while no operation was posted is only seen by trying.
  size_t before = done.size();
  bool moved = false;
  if (!greeted_.empty()) hear_newcomers(0, false);
  for (auto& [peer, p] : pairs_)
    if (!p->idle()) moved = p->progress(done) || moved;
  // A node that is down or cut off answers nothing, not even a reset: look
  // at what the kernel saw acknowledged, once a second while we wait.
  const auto now = std::chrono::steady_clock::now();
  if (silence_ms_ > 0 && now >= next_ack_check_) {
    for (auto& [peer, p] : pairs_) p->check_acknowledged(now, silence_ms_);
    next_ack_check_ = now + std::chrono::seconds(1);
  }
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
  greeted_.clear();
  closed_ = true;
}

}  // namespace tcp
}  // namespace coll::transport
