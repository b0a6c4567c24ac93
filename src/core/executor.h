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
#include "core/deadline.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace coll {

// A built schedule and the peers it talks to, shared by every call with the
// same shape (Communicator caches them).
struct Plan {
  algo::Schedule schedule;
  std::vector<int> peers;
};

struct Job {
  std::shared_ptr<const Plan> plan;
  const void* send = nullptr;
  void* recv = nullptr;
  coll_datatype_t dtype = COLL_UINT8;
  coll_redop_t op = COLL_SUM;
  const char* what = "";  // "allreduce", for messages
};

// Message counters per peer and direction. Both ends of a pair count the
// messages between them identically, so the count is the tag that catches a
// message from a different operation.
struct ChannelCounters {
  std::map<int, uint64_t> sent, received;
};

class Executor {
 public:
  // Throws coll::Error; on kTimeout the message lists what was pending.
  void run(std::vector<Job>& jobs, int rank, int nranks, uint64_t seq, ChannelCounters& counters,
           transport::Transport& transport, const Deadline& deadline);

 private:
  // A channel: the steps that use one peer in one direction, in program order.
  struct Channel {
    std::vector<uint32_t> steps;
    size_t next = 0;  // first not yet posted
  };

  void prepare(std::vector<Job>& jobs, int nranks);

  // Per-call state, kept between calls so that a small collective allocates
  // nothing: the batch's steps in global order, their unfinished dependency
  // counts, who depends on whom (compressed rows), the channels per peer.
  std::vector<const algo::Step*> steps_;
  std::vector<uint32_t> job_of_, base_, fill_;
  std::vector<uint32_t> waiting_;
  std::vector<uint32_t> dependents_start_, dependents_;
  std::vector<Channel> sends_, recvs_;  // indexed by peer rank
  std::vector<int> send_peers_, recv_peers_;
  std::vector<uint32_t> local_;  // copy / reduce / divide steps ready to run
  std::vector<std::pair<transport::RequestId, uint32_t>> in_flight_;
  std::vector<size_t> free_slots_, slot_of_;
  std::vector<transport::RequestId> done_;
  size_t max_staged_bytes_ = 0;

  // Staging for received chunks before they are reduced, and scratch for
  // schedules that ask for it. Kept between calls so that large collectives
  // do not page-fault fresh memory each time.
  std::vector<std::vector<std::byte>> staging_;
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace coll
