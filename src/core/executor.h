// Runs any schedule over any transport: posts each step once its
// dependencies are done (sends to one peer, and receives from one peer, in
// program order), reduces received chunks into place, and waits on the
// transport with the deadline. The one place where algorithms and
// transports meet.
#pragma once

#include "algorithms/schedule.h"
#include "core/deadline.h"
#include "transport/transport.h"

#include <coll/coll.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace coll {

struct ExecArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  coll_datatype_t dtype = COLL_FLOAT32;
  coll_redop_t op = COLL_SUM;
  int nranks = 1;
  int rank = 0;
  uint64_t seq = 0;       // this collective's sequence number on the communicator
  const char* what = "";  // "allreduce", for messages
};

class Executor {
 public:
  // Throws coll::Error; on kTimeout the message lists what was pending.
  void run(const algo::Schedule& schedule, const ExecArgs& args, transport::Transport& transport,
           const Deadline& deadline);

 private:
  // Staging for received chunks before they are reduced. Kept between
  // calls so that large collectives do not page-fault fresh memory each time.
  std::vector<std::vector<std::byte>> staging_;
};

}  // namespace coll
