// Socket helpers shared by the bootstrap store and the TCP transport:
// an owning fd, addresses as text, interface selection (COLL_SOCKET_IFNAME)
// and deadline-bounded connect / send / receive on non-blocking sockets.
#pragma once

#include "base/deadline.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <utility>

namespace coll::net {

// Owns a file descriptor; closes it once.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), parents_only_(std::exchange(other.parents_only_, false)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
      parents_only_ = std::exchange(other.parents_only_, false);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();
  // A rank's socket, which a forked child lets go of (fork_release.h).
  void parents_only();

 private:
  int fd_ = -1;
  bool parents_only_ = false;
};

// An IPv4 or IPv6 socket address. Text form: "1.2.3.4:5" or "[::1]:5".
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t length = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  int port() const;
  void set_port(int port);
  bool is_loopback() const;
  std::string to_string() const;

  // Parses "host:port" (host may be a name, IPv4, or [IPv6]); kInvalidArgument on failure.
  static SockAddr parse(const std::string& text, const char* what);
  // The wildcard address of the same family, with `port`.
  static SockAddr any(int family, int port);
};

// The address of the first interface allowed by COLL_SOCKET_IFNAME, with port 0.
// Without it: the first up, non-loopback, non-docker interface, else loopback.
// The name of the chosen interface is written to *ifname.
SockAddr choose_interface(std::string* ifname);

// A non-blocking listening socket on `addr` (port 0: the kernel picks);
// *bound receives the actual address.
Fd listen_on(const SockAddr& addr, SockAddr* bound, const char* what);

// Takes over a listening socket a launcher opened and handed down (fd number
// `fd`), so that no other process can take its port in between. kInvalidUsage
// when `fd` is not a listening socket.
Fd adopt_listener(int fd, SockAddr* bound, const char* what);

// What connect_to does when nothing listens at the address: wait for the
// peer to start listening (bootstrap: it may start after us), or fail at
// once with kRemote (the peer has listened since before we learnt the
// address, so a refusal means its process is gone).
enum class Refused { kRetry, kFail };

// Connects, retrying while the peer is unreachable (and, with kRetry, not
// yet listening), until the deadline.
Fd connect_to(const SockAddr& addr, const Deadline& deadline, const std::string& what,
              Refused refused = Refused::kRetry);

// A connection attempt, closed at once: true only when `addr` refuses it
// (nothing listens there: on a host that answers, the listener's process is
// gone). Accepted, unreachable or no answer within wait_ms are all false.
bool refuses_connections(const SockAddr& addr, int wait_ms);

// True for the errors of accept() that mean this process or host is out of
// descriptors or buffers (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connection
// stays in the backlog and the listener stays readable.
bool out_of_descriptors(int error);
// "the process's limit is N open files, ulimit -n", for their messages.
std::string descriptor_limit();

void set_nonblocking(int fd);
void set_nodelay(int fd);
// Keep-alive probes on an idle connection: a peer whose node is gone (power,
// cable, kernel) is found within about `silence_ms` (whole seconds, at
// least 2; at least 3 probes, so short settings take a little longer), even
// while we only wait to receive. A peer that is merely slow
// still answers them (its kernel does).
void set_keepalive(int fd, int64_t silence_ms);

// Blocking-with-deadline transfers on a non-blocking socket. `what` names the
// peer for error messages: a closed connection is kRemote, a deadline kTimeout.
void send_all(int fd, const void* data, size_t bytes, const Deadline& deadline, const std::string& what);
void recv_all(int fd, void* data, size_t bytes, const Deadline& deadline, const std::string& what);

}  // namespace coll::net
