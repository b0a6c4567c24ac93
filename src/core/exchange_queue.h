// The hand-over of non-blocking sends and receives from the issuing thread
// to the worker. Sends and receives issued one after another form a run:
// the worker posts them all and takes in the run's later ones while the
// earlier are in flight, so that a receive issued after a send can answer
// a peer's send that the send itself waits behind (a crossing exchange).
// Any other operation closes the run: what follows it starts a new one,
// which the worker begins only after that operation, keeping issue order.
#pragma once

#include "core/comm.h"
#include "core/worker.h"

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace coll {

// A send or a receive, as errors name it: "send of 4 x int32 to rank 2".
inline bool is_send(const OpRequest& op) { return op.collective == algo::Collective::kSend; }
std::string describe_message(const OpRequest& op);
// Why a blocking send or receive to `rank` itself is refused: nothing
// pending can answer it (exchanges.cc, and Communicator::run without a worker).
std::string unanswered_to_self(const OpRequest& op, int rank);

struct Exchange {
  OpRequest op;  // a send or a recv; op.root is the peer
  std::shared_ptr<Completion> done;
  bool blocking = false;  // the caller waits on it: nothing it issues can answer it
};

class ExchangeQueue {
 public:
  // Queues `e` in the open run; returns the id of a run it opened (the
  // caller then has the worker drain it), or 0 when one was open.
  uint64_t add(Exchange e) {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t opened = 0;
    if (open_ == 0) opened = open_ = ++last_;
    queue_.push_back({open_, std::move(e)});
    return opened;
  }

  // Another kind of operation is issued: the open run takes no more.
  void close() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = 0;
  }

  // Moves the queued exchanges of `run` into `out`. When none were queued
  // and the drain is `idle` (nothing of the run left in flight), the run
  // ends here: false, and a later exchange opens a new one. `*open`: the
  // run may still grow.
  bool take(uint64_t run, std::vector<Exchange>& out, bool idle, bool* open) {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t taken = 0;
    while (!queue_.empty() && queue_.front().first == run) {
      out.push_back(std::move(queue_.front().second));
      queue_.pop_front();
      ++taken;
    }
    *open = open_ == run;
    if (taken > 0 || !idle) return true;
    if (open_ == run) open_ = 0;
    return false;
  }

 private:
  std::mutex mutex_;
  std::deque<std::pair<uint64_t, Exchange>> queue_;  // runs in order; a run's exchanges in issue order
  uint64_t open_ = 0;                                // the run that takes new exchanges; 0: none
  uint64_t last_ = 0;
};

}  // namespace coll
