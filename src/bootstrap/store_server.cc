#include "bootstrap/store_server.h"

#include "base/error.h"
#include "base/log.h"
#include "bootstrap/store_protocol.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace coll::bootstrap {

namespace {

constexpr int kHandshakeTimeoutMs = 10000;
constexpr int kMaxStrangers = 512;
constexpr int kAcceptPauseMs = 100;
constexpr uint64_t kMaxUnreadReplyBytes = 4 * kMaxValueBytes;

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

// Reads what the socket holds into `in`. True: the peer closed (or the
// socket failed); what came before the close is still in `in`.
bool receive(int fd, std::string& in) {
  char buf[65536];
  for (;;) {
    ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    if (r > 0) {
      in.append(buf, static_cast<size_t>(r));
      // Enough for the largest request: parse it before reading more, so
      // that a client cannot make the store buffer without bound.
      if (in.size() > kMaxValueBytes + kMaxKeyBytes + 64) return false;
    } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
      return true;
    } else if (errno == EAGAIN) {
      return false;
    }
  }
}

}  // namespace

struct StoreServer::Conn {
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
  std::chrono::steady_clock::time_point waiting_until = std::chrono::steady_clock::time_point::max();  // a WAIT's end
};

StoreServer::StoreServer(net::Fd listener, net::SockAddr bound, const auth::Secret& secret)
    : listener_(std::move(listener)),
      bound_(bound),
      secret_(secret),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {  // without one, stop() is seen within 500 ms
  listener_.parents_only();
}

void StoreServer::stop() {
  stopping_ = true;
  // A forked child's copy serves nothing: waking would spin its parent's
  // thread on the eventfd they share (and the lock may be held by a thread
  // that the fork left behind).
  if (owner_ != getpid()) return;
  std::lock_guard<std::mutex> lock(wake_mutex_);
  const uint64_t one = 1;
  if (wake_.valid() && ::write(wake_.get(), &one, sizeof(one)) < 0) {
    // Full (stopped many times already) or closed: the thread is waking or gone.
  }
}

StoreServer* StoreServer::start(const net::SockAddr& bind_addr, const auth::Secret& secret) {
  net::SockAddr bound;
  net::Fd listener = net::listen_on(bind_addr, &bound, "bootstrap store");
  return start_on(std::move(listener), bound, secret);
}

StoreServer* StoreServer::start_on(net::Fd listener, const net::SockAddr& bound, const auth::Secret& secret) {
  auth::init();  // the crypto library's exit handler first, so that ours runs before it
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(let_threads_finish_at_exit); });
  auto* server = new StoreServer(std::move(listener), bound, secret);
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().push_back(server);
    server->owner_ = getpid();
  }
  // Detached: a rank may leave by _exit or fork with its store serving, and
  // nothing then joins the thread.
  try {
    std::thread([server] {
      try {
        server->run();
      } catch (const std::exception& e) {  // the process goes on; its ranks find the store gone
        log::warn(log::kBoot, "bootstrap store on ", server->bound_.to_string(), " failed: ", e.what());
        server->shut_down();
        server->finished_ = true;
      }
      auth::release_thread();
      server->done_ = true;
    }).detach();
  } catch (const std::exception& e) {  // std::system_error, or std::bad_alloc for its state
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      auto& r = registry();  // else every exit would wait for a thread that never ran
      r.erase(std::find(r.begin(), r.end(), server));
    }
    delete server;
    fail(Code::kSystem, "bootstrap store: cannot start its thread (", e.what(),
         "): the process has too many threads or too little memory");
  }
  log::info(log::kBoot, "bootstrap store listening on ", bound.to_string());
  return server;
}

// At exit, before the crypto library's exit handler (which frees every
// thread's crypto state): a store thread that ended meanwhile freed its own
// at the same moment, and the two freed the same memory (rank 0 aborted with
// "double free" about once in 450 runs under load). So this process's
// servers are stopped (which wakes a serving thread at once), and their
// threads waited for until done with the library, never past a second and a
// half.
void StoreServer::let_threads_finish_at_exit() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  const auto ours = [](const StoreServer* s) { return s->owner_ == getpid(); };  // a forked child's are not running
  for (StoreServer* s : registry())
    if (ours(s)) s->stop();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  for (StoreServer* s : registry()) {
    while (ours(s) && !s->done_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (ours(s) && !s->done_)
      log::warn(log::kBoot, "bootstrap store on ", s->bound_.to_string(),
                ": its thread still runs 1.5 s into exit; the process exits without it");
  }
}

void StoreServer::run() {
  if (!open_epoll()) {
    shut_down();
    finished_ = true;
    return;
  }
  std::vector<epoll_event> events(64);
  // Until every rank said goodbye, or died: a dead rank must not keep the
  // store (its thread, socket and connections) alive in the survivors.
  // The timeout bounds how late a stale handshake is noticed; stop() wakes it.
  while (!stopping_ && !every_rank_done()) {
    int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), next_wait_end_ms(500));
    for (int i = 0; i < n && !stopping_; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_.get()) {
        uint64_t count = 0;  // drained (stopping_ ends the loop); nothing to do if it fails
        if (::read(fd, &count, sizeof(count)) < 0) count = 0;
      } else if (fd == listener_.get()) {
        accept_connections();
      } else {
        serve_connection(fd, events[i].events);
      }
    }
    end_waits();
    drop_silent_strangers();
    resume_accepting();
  }
  shut_down();
  finished_ = true;
}

bool StoreServer::open_epoll() {
  epoll_ = net::Fd(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) {
    log::warn(log::kBoot, "bootstrap store: epoll_create1 failed: ", std::strerror(errno));
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener_.get();
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev);
  if (wake_.valid()) {
    ev.data.fd = wake_.get();
    epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &ev);
  }
  return true;
}

// The job's size is known only from the first goodbye (it carries it), so
// before any goodbye the store is never done. After one, the job is ending:
// done when every rank said goodbye or died, or when no rank is connected
// any more (one that never came, as in a join that failed, cannot). Not
// while another client is connected and has not said goodbye: a split
// communicator may outlive its parent, and its lazy connections and its
// own splits meet here. It says goodbye when destroyed; its connection
// closes when its process dies.
bool StoreServer::every_rank_done() const {
  if (expected_byes_ <= 0) return false;
  for (const auto& [fd, c] : conns_)
    if (c->authenticated && c->identity == kStoreClientIdentity && !c->said_bye) return false;
  if (byes_ + gone_ >= expected_byes_) return true;
  for (const auto& [fd, c] : conns_)
    if (c->authenticated && !c->said_bye) return false;
  return true;
}

// Strangers are the connections that have yet to prove the job secret: at
// most kMaxStrangers at once (the rest wait in the listener's backlog), so
// that a flood of them cannot take every descriptor the rank has.
void StoreServer::accept_connections() {
  while (accepting_) {  // the listener is non-blocking: take every pending connection
    if (strangers_ >= kMaxStrangers) return pause_accepting(std::chrono::steady_clock::now());
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    int cfd = accept4(listener_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0) return out_of_resources(errno);
    net::SockAddr peer;
    peer.storage = ss;
    peer.length = len;
    add_connection(net::Fd(cfd), peer);
  }
}

// Out of descriptors (or memory) the connection stays in the backlog and
// the listener stays readable: without a pause the loop would spin on it.
void StoreServer::out_of_resources(int error) {
  if (!net::out_of_descriptors(error)) return;
  if (!warned_out_of_resources_)
    log::warn(log::kBoot, "bootstrap store: cannot accept a connection: ", std::strerror(error), " (",
              net::descriptor_limit(), ": raise it); trying again every ", kAcceptPauseMs, " ms");
  warned_out_of_resources_ = true;
  pause_accepting(std::chrono::steady_clock::now() + std::chrono::milliseconds(kAcceptPauseMs));
}

void StoreServer::pause_accepting(std::chrono::steady_clock::time_point until) {
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, listener_.get(), nullptr);
  accepting_ = false;
  resume_at_ = until;
}

// Again once the pause is over and a stranger's place is free.
void StoreServer::resume_accepting() {
  if (accepting_ || std::chrono::steady_clock::now() < resume_at_ || strangers_ >= kMaxStrangers) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener_.get();
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, listener_.get(), &ev) == 0)
    accepting_ = true;
  else  // out of memory still: the next try is a pause later
    resume_at_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
}

// The server speaks first: its hello carries the nonce that the client must
// answer with proof that it knows the job secret.
void StoreServer::add_connection(net::Fd fd, const net::SockAddr& peer) {
  const int cfd = fd.get();
  auto c = std::make_unique<Conn>();
  c->fd = std::move(fd);
  c->fd.parents_only();
  ++strangers_;
  c->peer = peer.to_string();
  c->nonce = auth::random_nonce();
  auto hello = auth::make_server_hello(c->nonce);
  c->out.append(reinterpret_cast<const char*>(&hello), sizeof(hello));
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.fd = cfd;
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, cfd, &e);
  Conn& ref = *c;
  conns_[cfd] = std::move(c);
  if (!flush(ref)) close_conn(cfd, "");
}

void StoreServer::serve_connection(int fd, uint32_t events) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;  // closed by an earlier event of this batch
  Conn& c = *it->second;
  if ((events & EPOLLOUT) && !flush(c)) {
    close_conn(fd, "");
    return;
  }
  if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) serve_input(c);
}

// Serves what arrived before closing a connection whose peer has gone: a
// set or a goodbye sent just before the close still takes effect.
void StoreServer::serve_input(Conn& c) {
  const int fd = c.fd.get();
  const bool closed = receive(fd, c.in);
  std::string why;
  if (!process(c, &why)) {
    close_conn(fd, why);
    return;
  }
  if (closed) {
    close_departed(c);
    return;
  }
  if (!flush(c)) close_conn(fd, "");
}

// Parses as many complete frames as `c.in` holds. False: drop the connection.
bool StoreServer::process(Conn& c, std::string* why) {
  if (!c.authenticated) {
    if (c.in.size() < sizeof(auth::ClientHello)) return true;  // the rest of the hello is still on its way
    if (!authenticate(c, why)) return false;
  }
  StoreRequest request;
  // A held GET stops the parsing: the connection's later requests wait
  // behind it, so that its replies come in the order of its requests.
  while (c.waiting_key.empty()) {
    const Parse parsed = take_request(c.in, &request, why);
    if (parsed == Parse::kBad) return false;
    if (parsed == Parse::kNeedMore) break;
    apply(c, request);
  }
  // Bounds for a client that sends on while its request waits, or does not
  // read its replies (ours sends one request and reads its reply).
  if (c.in.size() > kMaxValueBytes + kMaxKeyBytes + 64) {
    *why = "it sent more than a request while one of its requests waited";
    return false;
  }
  if (c.out.size() > kMaxUnreadReplyBytes) {
    *why = "it left more than " + std::to_string(kMaxUnreadReplyBytes >> 20) + " MiB of replies unread";
    return false;
  }
  return true;
}

// Takes the client's hello off `c.in`; if it proves the job secret, queues
// the server's own proof, so that the client knows it reached this job's store.
bool StoreServer::authenticate(Conn& c, std::string* why) {
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
  --strangers_;
  c.identity = hello.identity;
  // A rank that comes again (its init retried with the same id) is not gone.
  if (c.identity != kStoreClientIdentity) data_.erase(gone_key(c.identity));
  return true;
}

void StoreServer::apply(Conn& c, const StoreRequest& request) {
  switch (request.op) {
    case StoreOp::kSet:
      on_set(c, request.key, request.value);
      break;
    case StoreOp::kGet:
      on_get(c, request.key, std::chrono::steady_clock::time_point::max());
      break;
    case StoreOp::kWait: {
      int64_t ms = 0;
      std::memcpy(&ms, request.value.data(), sizeof(ms));
      constexpr int64_t kMaxHoldMs = 3600 * 1000;  // a client asks for a look's time: seconds
      on_get(c, request.key,
             std::chrono::steady_clock::now() + std::chrono::milliseconds(std::clamp<int64_t>(ms, 0, kMaxHoldMs)));
      break;
    }
    case StoreOp::kAdd:
      on_add(c, request.key, request.value);
      break;
    case StoreOp::kBye:
      on_bye(c, request.value);
      break;
  }
}

void StoreServer::on_set(Conn& c, const std::string& key, const std::string& value) {
  data_[key] = value;
  c.out += reply(0, "");
  serve_waiters(key);
}

// A key that does not exist yet is waited for, not refused: ranks read what
// others have not written yet, and the store is where they meet.
void StoreServer::on_get(Conn& c, const std::string& key, std::chrono::steady_clock::time_point until) {
  if (data_.count(key)) {
    c.out += reply(0, data_[key]);
  } else if (until <= std::chrono::steady_clock::now()) {  // a look (StoreClient::has): not a waiter
    c.out += reply(kAbsent, "");
  } else {
    c.waiting_key = key;
    c.waiting_until = until;
    std::vector<int>& fds = waiters_[key];
    if (fds.empty() || fds.back() != c.fd.get()) fds.push_back(c.fd.get());  // a WAIT asked again: once
    if (until != std::chrono::steady_clock::time_point::max()) wait_ends_.emplace(until, c.fd.get());
  }
}

// Milliseconds until the first held WAIT ends, at most `cap`.
int StoreServer::next_wait_end_ms(int cap) const {
  const auto now = std::chrono::steady_clock::now();
  const auto ms_until = [&](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1;
  };
  int64_t left = cap;
  if (!wait_ends_.empty()) left = std::min(left, ms_until(wait_ends_.begin()->first));
  // A pause for the strangers' share ends with a connection's event; one
  // out of descriptors, at its time.
  if (!accepting_ && resume_at_ > now) left = std::min(left, ms_until(resume_at_));
  return static_cast<int>(std::clamp<int64_t>(left, 0, cap));
}

// A WAIT held to its end is answered kAbsent, and the requests behind it go
// on. wait_ends_ may name WAITs answered since, or connections closed: the
// connection must still hold a WAIT that ends then.
void StoreServer::end_waits() {
  const auto now = std::chrono::steady_clock::now();
  while (!wait_ends_.empty() && wait_ends_.begin()->first <= now) {
    const auto [until, fd] = *wait_ends_.begin();
    wait_ends_.erase(wait_ends_.begin());
    auto it = conns_.find(fd);
    if (it == conns_.end() || it->second->waiting_key.empty() || it->second->waiting_until != until) continue;
    Conn& c = *it->second;
    c.waiting_key.clear();
    c.out += reply(kAbsent, "");
    std::string why;
    if (!process(c, &why))
      close_conn(fd, why);
    else if (!flush(c))
      close_conn(fd, "");
  }
}

// The counter is 8 bytes in host order; a key that holds anything else
// (or nothing) counts from 0, so that the first add needs no set before it.
void StoreServer::on_add(Conn& c, const std::string& key, const std::string& value) {
  int64_t delta, sum = 0;
  std::memcpy(&delta, value.data(), sizeof(delta));
  if (data_.count(key) && data_[key].size() == sizeof(sum)) std::memcpy(&sum, data_[key].data(), sizeof(sum));
  sum += delta;
  data_[key].assign(reinterpret_cast<const char*>(&sum), sizeof(sum));
  c.out += reply(0, data_[key]);
  serve_waiters(key);
}

// A goodbye carries the job's size: the store learns how many to expect.
void StoreServer::on_bye(Conn& c, const std::string& value) {
  // A split communicator's goodbye: its connection no longer keeps the
  // store (a copy of its socket may live on in a process forked meanwhile).
  if (c.identity == kStoreClientIdentity) {
    c.said_bye = true;
    c.out += reply(0, "");
    return;
  }
  int32_t nranks = 0;
  if (value.size() == sizeof(nranks)) std::memcpy(&nranks, value.data(), sizeof(nranks));
  expected_byes_ = nranks;
  ++byes_;
  c.said_bye = true;
  c.out += reply(0, "");
}

// The connections that waited for the key, without a look at the others
// (a large job's init sets a key per rank while most ranks wait). The list
// may name connections closed or no longer waiting for it since.
void StoreServer::serve_waiters(const std::string& key) {
  auto waiting = waiters_.find(key);
  if (waiting == waiters_.end()) return;
  const std::vector<int> fds = std::move(waiting->second);
  waiters_.erase(waiting);
  for (int fd : fds) {
    auto it = conns_.find(fd);
    if (it == conns_.end() || it->second->waiting_key != key) continue;
    Conn& c = *it->second;
    c.waiting_key.clear();
    c.out += reply(0, data_[key]);
    flush(c);
  }
}

// Sends what the socket takes now; the rest waits for EPOLLOUT. False: the
// connection is broken.
bool StoreServer::flush(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0)
      c.out.erase(0, static_cast<size_t>(n));
    else if (n < 0 && (errno == EAGAIN || errno == EINTR))
      break;
    else
      return false;
  }
  watch_writes(c);
  return true;
}

// EPOLLOUT only while something waits to be sent: a writable socket would
// otherwise wake the loop all the time.
void StoreServer::watch_writes(const Conn& c) {
  epoll_event e{};
  e.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<unsigned>(EPOLLOUT));
  e.data.fd = c.fd.get();
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &e);
}

// One that leaves mid-handshake is a stranger or a port scan: say so once.
// One that leaves without a byte is most likely coll_comm_shrink probing
// whether this host is alive: not a warning.
void StoreServer::close_departed(Conn& c) {
  if (!c.authenticated && c.in.empty())
    log::info(log::kBoot, "bootstrap store: ", c.peer, " connected and left without a word (a probe)");
  close_conn(c.fd.get(), c.authenticated || c.in.empty() ? "" : "closed before authenticating");
}

// An empty `why` closes quietly (the peer went away; nothing it did wrong).
void StoreServer::close_conn(int fd, const std::string& why) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (!why.empty()) log::warn(log::kBoot, "bootstrap store: closing connection from ", it->second->peer, ": ", why);
  const Conn& c = *it->second;
  if (!c.authenticated) --strangers_;
  const bool left = c.authenticated && c.identity != kStoreClientIdentity && !c.said_bye;
  const uint32_t identity = c.identity;
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
  conns_.erase(it);
  if (left) {
    ++gone_;
    log::info(log::kBoot, "bootstrap store: rank ", identity, " left without a goodbye (did it die?)");
    data_[gone_key(identity)] = "";
    serve_waiters(gone_key(identity));
  }
}

// Silent strangers must not hold a slot forever.
void StoreServer::drop_silent_strangers() {
  auto now = std::chrono::steady_clock::now();
  std::vector<int> stale;
  for (auto& [fd, c] : conns_)
    if (!c->authenticated && now - c->opened > std::chrono::milliseconds(kHandshakeTimeoutMs)) stale.push_back(fd);
  for (int fd : stale) close_conn(fd, "no handshake within 10 s");
}

void StoreServer::shut_down() {
  log::info(log::kBoot, "bootstrap store on ", bound_.to_string(), " finished (", byes_, " ranks said bye, ", gone_,
            " left without)");
  conns_.clear();
  strangers_ = 0;
  data_.clear();
  epoll_.reset();
  listener_.reset();
  std::lock_guard<std::mutex> lock(wake_mutex_);
  wake_.reset();
}

}  // namespace coll::bootstrap
