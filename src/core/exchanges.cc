// The worker's run of sends and receives (exchange_queue.h): each is posted
// to the transport as it is taken, in issue order, and completes on its own,
// so that a receive issued after a send answers the peer's crossing send
// while both are in flight. A peer's messages still match in the order each
// side posted them. Messages to the own rank are copies, a send meeting the
// receive of the same rank in issue order.
#include "base/log.h"
#include "core/comm.h"
#include "core/exchange_queue.h"
#include "core/op_signature.h"
#include "reduce/reduce.h"

#include <algorithm>
#include <cstring>

namespace coll {

namespace {

// Looks at the transport without waiting this many times before a wait
// (as the executor does); then waits at most kOpenWaitMs while the run may
// still take a receive that the peer waits for, kClosedWaitMs once not.
constexpr int kLooksBeforeWait = 64;
constexpr int kOpenWaitMs = 1;
constexpr int kClosedWaitMs = 100;

size_t bytes_of(const OpRequest& op) { return op.count * reduce::datatype_size(op.dtype); }

}  // namespace

std::string describe_message(const OpRequest& op) {
  return str_cat(is_send(op) ? "send of " : "recv of ", op.count, " x ", reduce::datatype_name(op.dtype),
                 is_send(op) ? " to rank " : " from rank ", op.root);
}

std::string unanswered_to_self(const OpRequest& op, int rank) {
  return str_cat(algo::collective_name(op.collective), " on rank ", rank, ": peer is this rank itself, and no ",
                 is_send(op) ? "receive" : "send",
                 " is pending to answer it: a message to the own rank needs its counterpart in the same group "
                 "(coll_group_start/end), or issued non-blocking before it");
}

void Communicator::drain_exchanges(uint64_t run) {
  std::vector<Exchange> mine;
  coll_result_t code = COLL_SUCCESS;
  std::string message;
  try {
    exchange(run, mine);
    return;
  } catch (const Error& e) {
    code = static_cast<coll_result_t>(e.code()), message = e.what();
  } catch (const std::exception& e) {
    code = COLL_INTERNAL_ERROR, message = std::string("internal error: ") + e.what();
  }
  // Everything of the run fails with it, also what was issued after.
  bool open = false;
  while (exchanges_->take(run, mine, true, &open)) {
  }
  for (Exchange& e : mine)
    if (!e.done->done()) e.done->finish(code, message);
}

void Communicator::exchange(uint64_t run, std::vector<Exchange>& mine) {
  UsingTransport using_transport(*this);
  check_usable();
  ++seq_;
  OpRecord& record = recorder_->begin(seq_, "send/recv", 0, COLL_UINT8, COLL_SUM, 0, 0, 0, "exchange");
  struct InFlight {
    transport::RequestId id;
    size_t exchange;  // in mine
  };
  std::vector<InFlight> in_flight;
  std::vector<size_t> self_sends, self_recvs;  // unmatched, in issue order
  std::vector<transport::RequestId> done;
  uint32_t finished = 0;
  auto finish = [&](size_t k, coll_result_t result, std::string message) {
    mine[k].done->finish(result, std::move(message));
    record.steps_done.store(++finished, std::memory_order_relaxed);
  };
  // A message to the own rank: a copy once its counterpart is there.
  auto to_self = [&](size_t k) {
    (is_send(mine[k].op) ? self_sends : self_recvs).push_back(k);
    while (!self_sends.empty() && !self_recvs.empty()) {
      const size_t s = self_sends.front(), r = self_recvs.front();
      self_sends.erase(self_sends.begin());
      self_recvs.erase(self_recvs.begin());
      const OpRequest &send = mine[s].op, &recv = mine[r].op;
      if (send.dtype != recv.dtype || send.count != recv.count) {  // nothing moved, and no peer is involved
        const std::string why =
            str_cat("rank ", rank_, ": a ", describe_message(send), " (itself) met a ", describe_message(recv),
                    ": a send and its receive must agree on count and datatype");
        finish(s, COLL_INVALID_USAGE, why);
        finish(r, COLL_INVALID_USAGE, why);
        continue;
      }
      if (bytes_of(send) > 0) std::memmove(recv.recv, send.send, bytes_of(send));
      finish(s, COLL_SUCCESS, "");
      finish(r, COLL_SUCCESS, "");
    }
    // The caller waits on a blocking one: nothing it could issue will answer.
    for (auto* pending : {&self_sends, &self_recvs})
      if (!pending->empty() && mine[pending->back()].blocking) {
        finish(pending->back(), COLL_INVALID_USAGE, unanswered_to_self(mine[pending->back()].op, rank_));
        pending->pop_back();
      }
  };

  try {
    Deadline deadline = Deadline::after_ms(timeout_ms_, &aborted_);
    int idle_looks = 0;
    bool open = true;
    for (;;) {
      const size_t before = mine.size();
      const bool idle = in_flight.empty() && self_sends.empty() && self_recvs.empty();
      if (!exchanges_->take(run, mine, idle, &open)) break;
      for (size_t k = before; k < mine.size(); ++k) {
        const OpRequest& op = mine[k].op;
        if (op.root == rank_) {
          to_self(k);
          continue;
        }
        connect({op.root}, deadline);
        const uint64_t signature = signature_of(op.collective, op.dtype, op.op, op.root, op.count).bits();
        const size_t peer = static_cast<size_t>(op.root);
        const transport::RequestId id =
            is_send(op)
                ? transport_->post_send(op.root, op.send, bytes_of(op), make_tag(signature, counters_.sent[peer]++))
                : transport_->post_recv(op.root, op.recv, bytes_of(op),
                                        make_tag(signature, counters_.received[peer]++));
        in_flight.push_back({id, k});
      }
      if (mine.size() > before) deadline = Deadline::after_ms(timeout_ms_, &aborted_), idle_looks = 0;
      if (!open && in_flight.empty()) {  // what is still unmatched never will be: another operation follows
        for (auto* pending : {&self_sends, &self_recvs})
          for (size_t k : *pending)
            finish(k, COLL_INVALID_USAGE,
                   str_cat("rank ", rank_, ": a ", describe_message(mine[k].op),
                           " (itself) had no counterpart before the next operation was issued"));
        self_sends.clear(), self_recvs.clear();
        continue;
      }

      const bool wait = idle_looks >= kLooksBeforeWait;
      done.clear();
      transport_->poll(done, wait ? deadline.remaining_ms(open ? kOpenWaitMs : kClosedWaitMs) : 0);
      idle_looks = done.empty() ? idle_looks + 1 : 0;
      for (transport::RequestId id : done) {
        auto it = std::find_if(in_flight.begin(), in_flight.end(), [&](const InFlight& f) { return f.id == id; });
        if (it == in_flight.end()) fail(Code::kInternal, "rank ", rank_, ": unknown request ", id, " completed");
        finish(it->exchange, COLL_SUCCESS, "");
        in_flight.erase(it);
      }
      if (!done.empty()) {
        deadline = Deadline::after_ms(timeout_ms_, &aborted_);
        continue;
      }
      if (wait && deadline.cancelled())
        fail(Code::kInvalidUsage, "rank ", rank_, ": send/recv #", seq_, " was aborted (coll_comm_abort)");
      if (wait && deadline.expired()) {
        std::string pending;
        for (const InFlight& f : in_flight)
          pending += (pending.empty() ? "" : "; ") + describe_message(mine[f.exchange].op);
        for (auto* self : {&self_sends, &self_recvs})
          for (size_t k : *self) pending += (pending.empty() ? "" : "; ") + describe_message(mine[k].op) + " (itself)";
        fail(Code::kTimeout, "rank ", rank_, ": send/recv #", seq_, " timed out after ", deadline.budget_ms(), " ms (",
             deadline.setting(), ") with nothing moving; unfinished: ", pending);
      }
    }
  } catch (const Error& e) {
    throw operation_failed(e, "send/recv", record);
  }
  recorder_->end(record, nullptr);
}

}  // namespace coll
