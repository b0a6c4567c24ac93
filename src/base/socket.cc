#include "base/socket.h"

#include "base/config.h"
#include "base/error.h"
#include "base/fork_release.h"
#include "base/log.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>
#include <vector>

namespace coll::net {

void Fd::reset() {
  if (parents_only_)
    fork_release::close(fd_);
  else if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
  parents_only_ = false;
}

void Fd::parents_only() {
  if (fd_ < 0 || parents_only_) return;
  fork_release::add(fd_);
  parents_only_ = true;
}

int SockAddr::port() const {
  if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

void SockAddr::set_port(int port) {
  if (family() == AF_INET)
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(static_cast<uint16_t>(port));
  else
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(static_cast<uint16_t>(port));
}

bool SockAddr::is_loopback() const {
  if (family() == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr) >> 24) == 127;
  return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr);
}

std::string SockAddr::to_string() const {
  char host[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, host, sizeof(host));
    return str_cat(host, ":", port());
  }
  inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, host, sizeof(host));
  return str_cat("[", host, "]:", port());
}

SockAddr SockAddr::parse(const std::string& text, const char* what) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      fail(Code::kInvalidArgument, what, "='", text, "' is not [ipv6]:port");
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos) fail(Code::kInvalidArgument, what, "='", text, "' is not host:port");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0 || found == nullptr)
    fail(Code::kInvalidArgument, what, "='", text, "': cannot resolve: ", gai_strerror(rc));
  SockAddr addr;
  std::memcpy(&addr.storage, found->ai_addr, found->ai_addrlen);
  addr.length = found->ai_addrlen;
  freeaddrinfo(found);
  return addr;
}

SockAddr SockAddr::any(int family, int port) {
  SockAddr addr;
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_any;
    addr.length = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr.storage);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_ANY);
    addr.length = sizeof(sockaddr_in);
  }
  addr.set_port(port);
  return addr;
}

namespace {

// NCCL's COLL_SOCKET_IFNAME grammar: "eth,ib" prefixes; "^docker" excludes; "=eth0" exact.
bool interface_allowed(const std::string& name, const std::string& spec) {
  if (spec.empty()) return name.rfind("docker", 0) != 0 && name != "lo";
  bool exclude = spec[0] == '^';
  std::string list = exclude ? spec.substr(1) : spec;
  bool exact = !list.empty() && list[0] == '=';
  if (exact) list = list.substr(1);
  std::stringstream items(list);
  std::string item;
  bool match = false;
  while (std::getline(items, item, ',')) match = match || (exact ? name == item : name.rfind(item, 0) == 0);
  return exclude ? !match : match;
}

}  // namespace

SockAddr choose_interface(std::string* ifname) {
  std::string spec = config::get_string("COLL_SOCKET_IFNAME");
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) fail_errno(Code::kSystem, errno, "listing interfaces", "getifaddrs");
  SockAddr chosen, loopback;
  std::string chosen_name, loopback_name;
  // IPv4 first, then IPv6, so that a dual-stack interface is reached by IPv4.
  for (int family : {AF_INET, AF_INET6}) {
    for (ifaddrs* it = list; it != nullptr && chosen.length == 0; it = it->ifa_next) {
      if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != family) continue;
      if ((it->ifa_flags & IFF_UP) == 0) continue;
      if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(it->ifa_addr)->sin6_addr))
        continue;
      SockAddr a;
      a.length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      std::memcpy(&a.storage, it->ifa_addr, a.length);
      if (spec.empty() && a.is_loopback()) {
        if (loopback.length == 0) loopback = a, loopback_name = it->ifa_name;
        continue;
      }
      if (interface_allowed(it->ifa_name, spec)) chosen = a, chosen_name = it->ifa_name;
    }
  }
  freeifaddrs(list);
  if (chosen.length == 0 && spec.empty() && loopback.length != 0) chosen = loopback, chosen_name = loopback_name;
  if (chosen.length == 0)
    fail(Code::kInvalidUsage, "no up interface with an address matches COLL_SOCKET_IFNAME='", spec, "'");
  chosen.set_port(0);
  if (ifname != nullptr) *ifname = chosen_name;
  return chosen;
}

bool out_of_descriptors(int error) { return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM; }

std::string descriptor_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "see ulimit -n";
  return str_cat("the process's limit is ", limit.rlim_cur, " open files, ulimit -n");
}

void set_nonblocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    fail_errno(Code::kSystem, errno, "making a socket non-blocking", "fcntl");
}

void set_nodelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
    fail_errno(Code::kSystem, errno, "setting TCP_NODELAY", "setsockopt");
}

void set_keepalive(int fd, int64_t silence_ms) {
  // Half the silence idle, then probes that fill the other half, at least
  // 3 of them (one lost probe is not a dead peer): 20 s is 10 s idle and 5
  // probes 2 s apart. The kernel takes at most 32767 s for either time.
  const int silence_s = static_cast<int>(std::clamp<int64_t>(silence_ms / 1000, 2, 65534));
  const int probes = silence_s >= 10 ? 5 : 3;
  int one = 1, idle_s = silence_s / 2, interval_s = std::clamp((silence_s - idle_s) / probes, 1, 32767);
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s)) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s)) < 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes)) < 0)
    fail_errno(Code::kSystem, errno, "setting TCP keep-alive", "setsockopt");
}

Fd listen_on(const SockAddr& addr, SockAddr* bound, const char* what) {
  Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) fail_errno(Code::kSystem, errno, what, "socket");
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), addr.get(), addr.length) < 0)
    fail_errno(Code::kSystem, errno, str_cat(what, " on ", addr.to_string()), "bind");
  if (::listen(fd.get(), 1024) < 0) fail_errno(Code::kSystem, errno, what, "listen");
  if (bound != nullptr) {
    *bound = addr;
    bound->length = sizeof(bound->storage);
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(&bound->storage), &bound->length);
  }
  return fd;
}

Fd adopt_listener(int fd, SockAddr* bound, const char* what) {
  int listening = 0;
  socklen_t len = sizeof(listening);
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || listening == 0)
    fail(Code::kInvalidUsage, what, ": descriptor ", fd, " is not a listening socket");
  Fd owned(fd);
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) fail_errno(Code::kSystem, errno, what, "fcntl");
  set_nonblocking(fd);
  bound->length = sizeof(bound->storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound->storage), &bound->length);
  return owned;
}

namespace {

// Waits for `events` on fd until the deadline; kTimeout names `what`.
void wait_for(int fd, short events, const Deadline& deadline, const std::string& what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.remaining_ms(1000));
    if (rc > 0) return;
    if (rc < 0 && errno != EINTR) fail_errno(Code::kSystem, errno, what, "poll");
    if (deadline.expired())
      fail(Code::kTimeout, "timed out after ", deadline.budget_ms(), " ms (", deadline.setting(), ") ", what);
  }
}

}  // namespace

Fd connect_to(const SockAddr& addr, const Deadline& deadline, const std::string& what, Refused refused) {
  int backoff_ms = 1;
  for (;;) {
    Fd fd(::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) fail_errno(Code::kSystem, errno, what, "socket");
    int rc = ::connect(fd.get(), addr.get(), addr.length);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      wait_for(fd.get(), POLLOUT, deadline, str_cat("connecting to ", what));
      socklen_t len = sizeof(err);
      getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err == 0) {
      set_nodelay(fd.get());
      return fd;
    }
    if (err == ECONNREFUSED && refused == Refused::kFail)
      fail(Code::kRemote, what,
           " refused the connection (nothing listens there: its process or communicator has ended, or the address is"
           " not that rank's: check COLL_SOCKET_IFNAME)");
    // The peer may not be listening yet (it starts later than we do): retry.
    bool retry =
        err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNRESET;
    if (!retry) fail_errno(Code::kSystem, err, str_cat("connecting to ", what), "connect");
    if (deadline.expired())
      fail(Code::kTimeout, "timed out after ", deadline.budget_ms(), " ms (", deadline.setting(), ") connecting to ",
           what, ": ", std::strerror(err));
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
    backoff_ms = std::min(backoff_ms * 2, 100);
  }
}

bool refuses_connections(const SockAddr& addr, int wait_ms) {
  try {
    connect_to(addr, Deadline::after_ms(wait_ms), "a probed listener", Refused::kFail);
    return false;
  } catch (const Error& e) {
    return e.code() == Code::kRemote;
  }
}

void send_all(int fd, const void* data, size_t bytes, const Deadline& deadline, const std::string& what) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_for(fd, POLLOUT, deadline, str_cat("sending to ", what));
    } else if (n < 0 && errno != EINTR) {
      if (errno == EPIPE || errno == ECONNRESET)
        fail(Code::kRemote, what, " closed the connection (", std::strerror(errno), ")");
      fail_errno(Code::kSystem, errno, str_cat("sending to ", what), "send");
    }
  }
}

void recv_all(int fd, void* data, size_t bytes, const Deadline& deadline, const std::string& what) {
  auto* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
    } else if (n == 0) {
      fail(Code::kRemote, what, " closed the connection");
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_for(fd, POLLIN, deadline, str_cat("receiving from ", what));
    } else if (errno != EINTR) {
      if (errno == ECONNRESET) fail(Code::kRemote, what, " reset the connection");
      fail_errno(Code::kSystem, errno, str_cat("receiving from ", what), "recv");
    }
  }
}

}  // namespace coll::net
