// Runs schedules over a transport: posts each step once its dependencies
// are done (sends to one peer, and receives from one peer, in program
// order), reduces received chunks into place, and waits on the transport
// with the deadline. The one place where algorithms and transports meet.
//
// Several schedules may run as one batch (a group, or one collective): their
// steps share the per-peer channels in batch order, each with its own
// buffers, datatype and op.
#pragma once

#include "algorithms/schedule.h"
#include "base/deadline.h"
#include "base/memory_kind.h"
#include "core/flight_recorder.h"
#include "core/kind_buffer.h"
#include "reduce/backend.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace coll {

class FastPath;

// Steps as the executor walks them: numbered across a batch (job j's step i
// is base + i), with their dependency counts, who depends on whom
// (compressed rows), and the transfers filed per peer and direction in
// program order. It depends only on the schedules, so a plan carries the
// graph of its own schedule and a single collective builds nothing per call.
struct Graph {
  struct Channel {
    int peer;
    std::vector<uint32_t> steps;
  };
  std::vector<const algo::Step*> steps;  // point into the schedules
  std::vector<uint32_t> job_of;
  std::vector<uint32_t> deps;  // unfinished dependencies at the start
  std::vector<uint32_t> dependents_start, dependents;
  std::vector<Channel> sends, recvs;
  std::vector<uint32_t> ready;  // local steps with no dependencies
  size_t max_staged_bytes = 0;  // largest received chunk that is reduced

  void build(const std::vector<const algo::Schedule*>& schedules);
};

// A built schedule, the peers it talks to and its graph, shared by every call
// with the same shape (Communicator caches them). Not copyable: the graph
// points into the schedule.
struct Plan {
  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  explicit Plan(algo::Schedule s) : schedule(std::move(s)), peers(schedule.peers()) { graph.build({&schedule}); }

  algo::Schedule schedule;
  std::vector<int> peers;
  Graph graph;
};

struct Job {
  std::shared_ptr<const Plan> plan;
  const void* send = nullptr;
  void* recv = nullptr;
  coll_datatype_t dtype = COLL_UINT8;
  coll_redop_t op = COLL_SUM;
  const char* what = "";  // "allreduce", for messages
  size_t count = 0;       // as the caller gave it, for the flight recorder
  int root = 0;
  uint64_t signature = 0;  // OpSignature::bits(): in every message's tag
  // The fast path that runs it instead of its plan (core/fastpath/), if
  // one takes it; the plan is null where the fast path never declines.
  FastPath* fast_path = nullptr;
  MemoryKind kind = MemoryKind::kHost;  // of send and recv: picks the backend of the local steps (reduce/backend.h)
  void* stream = nullptr;               // the caller's coll_stream_t; null for host memory
};

// Message counters per peer rank and direction. Both ends of a pair count
// the messages between them identically, so the count is the tag that
// catches a message from a different operation.
struct ChannelCounters {
  explicit ChannelCounters(int nranks) : sent(static_cast<size_t>(nranks)), received(static_cast<size_t>(nranks)) {}
  std::vector<uint64_t> sent, received;
};

class Executor {
 public:
  // Throws coll::Error; on kTimeout the message lists what was pending, and
  // a cancelled deadline (coll_comm_abort) ends it within kCancelCheckMs.
  // `record` follows the steps done and, in long waits, the peers waited on.
  void run(std::vector<Job>& jobs, int rank, int nranks, uint64_t seq, ChannelCounters& counters,
           transport::Transport& transport, const Deadline& deadline, FlightRecorder& recorder, OpRecord& record);

 private:
  // What one run() works on, set at its start; the steps below read it.
  struct Call {
    std::vector<Job>* jobs = nullptr;
    const Graph* graph = nullptr;
    int rank = 0, nranks = 0;
    uint64_t seq = 0;
    ChannelCounters* counters = nullptr;
    transport::Transport* transport = nullptr;
    const Deadline* deadline = nullptr;
    FlightRecorder* recorder = nullptr;
    OpRecord* record = nullptr;
    size_t completed = 0;  // steps done
    int idle_looks = 0;    // polls in a row that completed nothing
    size_t oldest = 0;     // in_flight_'s oldest entry that is not a hole
  };

  const Graph& graph_of(const std::vector<Job>& jobs);
  void prepare();
  void run_local_steps();
  void post_ready();
  bool post_recv(int peer, uint32_t step);
  void wait_and_complete();
  uint32_t take(transport::RequestId id);
  void complete(uint32_t step);
  void finish(uint32_t step);

  const Job& job_of(uint32_t step) const;
  std::byte* address(uint32_t step, const algo::Region& region);
  size_t elems(uint32_t step) const;

  std::string describe_call() const;
  std::string describe_unfinished() const;
  [[noreturn]] void fail_stalled() const;
  [[noreturn]] void fail_aborted() const;
  [[noreturn]] void fail_timed_out() const;
  // "1,3": the peers of the requests still in flight.
  std::string peers_in_flight(const Graph& g) const;

  Call call_;

  // The batch's graph when it holds several jobs (one job uses its plan's).
  Graph batch_;
  std::vector<const algo::Schedule*> schedules_;

  // Per-call state, kept between calls so that a small collective allocates
  // nothing: unfinished dependency counts, each channel's first step not yet
  // posted, local steps ready to run, requests in flight.
  std::vector<uint32_t> waiting_;
  std::vector<size_t> send_next_, recv_next_;
  std::vector<uint32_t> local_;  // copy / reduce / divide steps ready to run
  std::vector<std::pair<transport::RequestId, uint32_t>> in_flight_;
  std::vector<size_t> free_slots_, slot_of_;
  // A received chunk reduced piece by piece straight from the transport's
  // buffers (transports that deliver pieces): what the sink needs.
  struct Combine {
    const reduce::Backend* backend;
    void* stream;
    coll_datatype_t dtype;
    coll_redop_t op;
    size_t elem_size;
    std::byte* dst;
    const std::byte* src;
    bool received_first;  // Step::received_first
  };
  static void combine_piece(const transport::Sink& sink, size_t offset, const void* data, size_t bytes);
  // By step. A deque: growing it keeps the addresses sinks already hold.
  std::deque<Combine> combine_;
  std::vector<transport::RequestId> done_;

  // Staging for received chunks before they are reduced, and scratch for
  // schedules that ask for it. Kept between calls so that large collectives
  // do not page-fault fresh memory each time.
  // Of the operation's memory kind: device memory for device buffers.
  std::vector<KindBuffer> staging_;
  std::vector<KindBuffer> scratch_;
};

}  // namespace coll
