// A group (coll_group_start/end) as one batch, in an order that every pair
// of ranks agrees on whatever order each rank issued its calls in:
//
//   1. the collectives, in issue order (the same on every rank: the rule);
//   2. the sends and receives to and from other ranks, in issue order (a
//      pair's sends meet its receives in the order each side posted them:
//      MPI's non-overtaking rule);
//   3. the messages to the own rank, as copies (its k-th send meets its
//      k-th receive).
//
// The executor files each peer's messages in job order, so the collectives'
// messages between two ranks come first on their channel and the sends
// after, on both sides. Either side may put its part in a group, or not:
// a group changes nothing on the wire.
#include "algorithms/builder.h"
#include "core/comm.h"
#include "core/exchange_queue.h"
#include "reduce/reduce.h"

#include <algorithm>

namespace coll {

namespace {

// A copy from the send's buffer into the receive's.
std::shared_ptr<const Plan> copy_plan(size_t elem_size, size_t bytes) {
  algo::ScheduleBuilder b("copy to this rank", elem_size, std::nullopt);
  if (bytes > 0) b.copy({algo::BufferId::kSend, 0}, {algo::BufferId::kRecv, 0}, bytes);
  return std::make_shared<const Plan>(b.finish());
}

}  // namespace

void Communicator::compile_group(std::span<const OpRequest> ops, std::vector<Job>& jobs) {
  jobs.clear();
  for (const OpRequest& op : ops)
    if (!algo::is_point_to_point(op.collective)) jobs.push_back(job_for(op, true));
  std::vector<const OpRequest*> self_sends, self_recvs;
  for (const OpRequest& op : ops) {
    if (!algo::is_point_to_point(op.collective)) continue;
    if (op.root == rank_) {
      (is_send(op) ? self_sends : self_recvs).push_back(&op);
      continue;
    }
    jobs.push_back(job_for(op, true));
  }

  // Refused before anything moves: the communicator stays usable.
  for (size_t k = 0; k < std::max(self_sends.size(), self_recvs.size()); ++k) {
    if (k >= self_sends.size() || k >= self_recvs.size()) {
      const OpRequest& alone = k < self_sends.size() ? *self_sends[k] : *self_recvs[k];
      fail(Code::kInvalidUsage, "group_end on rank ", rank_, ": the group's ", describe_message(alone), " has no ",
           is_send(alone) ? "receive" : "send",
           " to meet it in the group (messages to the own rank are copies: ", self_sends.size(), " send(s), ",
           self_recvs.size(), " recv(s))");
    }
    const OpRequest& send = *self_sends[k];
    const OpRequest& recv = *self_recvs[k];
    if (send.dtype != recv.dtype || send.count != recv.count)
      fail(Code::kInvalidUsage, "group_end on rank ", rank_, ": the group's ", describe_message(send), " met its ",
           describe_message(recv), ": a send and its receive must agree on count and datatype");
    const size_t elem_size = reduce::datatype_size(send.dtype);
    jobs.push_back(Job{copy_plan(elem_size, send.count * elem_size), send.send, recv.recv, send.dtype, COLL_SUM,
                       "send/recv", send.count, rank_, 0, nullptr, send.kind, send.stream});
  }
}

}  // namespace coll
