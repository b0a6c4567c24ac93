// The bootstrap key-value store: one thread in the process that created the
// job's unique id (rank 0, or a test's parent process), serving every rank
// over authenticated TCP connections with an epoll loop. A connection that
// fails the handshake, sends a malformed frame, or stays silent during the
// handshake is closed and logged; the other ranks are not disturbed.
//
// Life: the thread ends when every rank has said BYE or at once on stop().
// Servers are owned by a process-wide registry that is never destroyed, so a
// process may exit (or fork) with a server running. At exit the process that
// started them stops its servers and waits (1.5 s at most) for their threads
// to be done with the crypto library before the library's exit handler runs
// (let_threads_finish_at_exit).
#pragma once

#include "base/auth.h"
#include "base/socket.h"

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace coll::bootstrap {

struct StoreRequest;

class StoreServer {
 public:
  // Binds `bind_addr` (port 0: any free port) and starts serving. The
  // returned server lives until the process exits.
  static StoreServer* start(const net::SockAddr& bind_addr, const auth::Secret& secret);
  // The same on a socket already listening (a communicator's standby, for
  // coll_comm_shrink).
  static StoreServer* start_on(net::Fd listener, const net::SockAddr& bound, const auth::Secret& secret);

  const net::SockAddr& address() const { return bound_; }
  // Ends the serving thread at once (it wakes from its wait).
  void stop();
  bool finished() const { return finished_; }

 private:
  struct Conn;  // one client's connection and its buffers (store_server.cc)

  StoreServer(net::Fd listener, net::SockAddr bound, const auth::Secret& secret);
  static void let_threads_finish_at_exit();

  // The serving thread, in the order it takes its steps.
  void run();
  bool open_epoll();
  bool every_rank_done() const;
  void accept_connections();
  void out_of_resources(int error);
  void pause_accepting(std::chrono::steady_clock::time_point until);
  void resume_accepting();
  void add_connection(net::Fd fd, const net::SockAddr& peer);
  void serve_connection(int fd, uint32_t events);
  void serve_input(Conn& c);
  bool process(Conn& c, std::string* why);
  bool authenticate(Conn& c, std::string* why);
  void apply(Conn& c, const StoreRequest& request);
  void on_set(Conn& c, const std::string& key, const std::string& value);
  void on_get(Conn& c, const std::string& key, std::chrono::steady_clock::time_point until);
  int next_wait_end_ms(int cap) const;
  void end_waits();
  void on_add(Conn& c, const std::string& key, const std::string& value);
  void on_bye(Conn& c, const std::string& value);
  void serve_waiters(const std::string& key);
  bool flush(Conn& c);
  void watch_writes(const Conn& c);
  void close_departed(Conn& c);
  void close_conn(int fd, const std::string& why);
  void drop_silent_strangers();
  void shut_down();

  net::Fd listener_;
  net::SockAddr bound_;
  auth::Secret secret_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> finished_{false};
  std::atomic<bool> done_{false};  // the thread is past its last crypto call
  pid_t owner_ = 0;                // the process that started it
  std::mutex wake_mutex_;          // stop() writes wake_ while the thread has not closed it
  net::Fd wake_;                   // an eventfd in the thread's epoll set

  // Touched by the serving thread alone.
  net::Fd epoll_;
  std::map<int, std::unique_ptr<Conn>> conns_;                           // by descriptor
  std::unordered_map<std::string, std::vector<int>> waiters_;            // descriptors held by a GET or WAIT, by key
  std::multimap<std::chrono::steady_clock::time_point, int> wait_ends_;  // held WAITs' ends, and their descriptors
  std::map<std::string, std::string> data_;
  int byes_ = 0;
  int gone_ = 0;            // ranks whose first communicator left without a goodbye: they died
  int expected_byes_ = -1;  // the job's size, once a rank said goodbye
  int strangers_ = 0;       // connections yet to prove the job secret
  bool accepting_ = true;   // the listener is in the epoll set
  std::chrono::steady_clock::time_point resume_at_{};
  bool warned_out_of_resources_ = false;
};

}  // namespace coll::bootstrap
