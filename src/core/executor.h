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
#include <string>
#include <vector>

namespace coll {

struct Job {
  algo::Schedule schedule;
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
  // Staging for received chunks before they are reduced, and scratch for
  // schedules that ask for it. Kept between calls so that large collectives
  // do not page-fault fresh memory each time.
  std::vector<std::vector<std::byte>> staging_;
  std::vector<std::vector<std::byte>> scratch_;
};

}  // namespace coll
