// Allreduces of one node that are not schedules (ARCHITECTURE.md, "Fast
// paths"): the communicator asks each fast path, in order, whether it takes
// an operation before it compiles a schedule for it, and runs the one that
// does. A fast path sees of its communicator only what FastPathHost gives.
#pragma once

#include "base/deadline.h"
#include "core/executor.h"
#include "core/flight_recorder.h"
#include "transport/transport.h"

#include <memory>
#include <string>
#include <vector>

namespace coll {

struct OpRequest;

// What a fast path may use of its communicator.
class FastPathHost {
 public:
  virtual int host_rank() const = 0;
  virtual int host_nranks() const = 0;
  virtual uint64_t host_seq() const = 0;               // the operation's number, for messages
  virtual const std::vector<int>& others() const = 0;  // every rank but this one
  virtual transport::Transport& links() = 0;           // the router
  virtual FlightRecorder& flight_recorder() = 0;
  virtual void connect(const std::vector<int>& peers, const Deadline& deadline) = 0;
  // Compiles an operation of the library's own (its algorithm fixed).
  virtual void compile_own(const OpRequest& op, std::vector<Job>& jobs) = 0;
  // Runs it inside the caller's operation: the same executor, counters and
  // deadline, so that it fails, times out and aborts like the caller's.
  virtual void run_inside(std::vector<Job>& job, const void* send, void* recv, const Deadline& deadline,
                          OpRecord& record) = 0;

 protected:
  ~FastPathHost() = default;
};

class FastPath {
 public:
  virtual ~FastPath() = default;
  // As the flight recorder and the logs name it.
  virtual const std::string& name() const = 0;
  // Whether it takes `op`, an allreduce whose algorithm nobody named,
  // outside a group: decided from the call alone, so that every rank
  // decides alike.
  virtual bool takes(const OpRequest& op) const = 0;
  // Whether the job needs its plan too: run() may decline at run time.
  virtual bool needs_plan() const = 0;
  // Runs it; false, having written nothing, when the ranks decided together
  // to run the plan instead.
  virtual bool run(const Job& job, const Deadline& deadline, OpRecord& record) = 0;
};

// The allreduce of a few bytes through every rank's board
// (Transport::board(); COLL_SHM_ONESHOT_BYTES); null where there is none.
std::unique_ptr<FastPath> make_board_allreduce(FastPathHost& host);
// The allreduce through the peers' memory (Transport::peer_access();
// COLL_SHM_MAPPED, COLL_SHM_STAGED and their sizes); null where neither
// form is on. `prepare` compiles its own operations: call it on the thread
// that creates the communicator.
std::unique_ptr<FastPath> make_peer_access_allreduce(FastPathHost& host);
// Whether its staged form, in place, writes its results back with
// non-temporal stores, as out of place (peer_access_allreduce.cc).
bool streams_in_place(size_t l2_bytes_per_core, int ranks_per_core, int nranks);

}  // namespace coll
