// The bootstrap key-value store: one thread in the process that created the
// job's unique id (rank 0, or a test's parent process), serving every rank
// over authenticated TCP connections with an epoll loop. A connection that
// fails the handshake, sends a malformed frame, or stays silent during the
// handshake is closed and logged; the other ranks are not disturbed.
//
// Life: the thread ends when every rank has said BYE or on stop(). Servers
// are owned by a process-wide registry that is never destroyed, so a process
// may exit (or fork) with a server running.
#pragma once

#include "base/auth.h"
#include "base/socket.h"

#include <atomic>
#include <string>

namespace coll::bootstrap {

class StoreServer {
 public:
  // Binds `bind_addr` (port 0: any free port) and starts serving. The
  // returned server lives until the process exits.
  static StoreServer* start(const net::SockAddr& bind_addr, const auth::Secret& secret);
  // The same on a socket already listening (a communicator's standby, for
  // coll_comm_shrink).
  static StoreServer* start_on(net::Fd listener, const net::SockAddr& bound, const auth::Secret& secret);

  const net::SockAddr& address() const { return bound_; }
  void stop() { stopping_ = true; }
  bool finished() const { return finished_; }

 private:
  StoreServer(net::Fd listener, net::SockAddr bound, const auth::Secret& secret);
  void run();

  net::Fd listener_;
  net::SockAddr bound_;
  auth::Secret secret_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};
};

}  // namespace coll::bootstrap
