// Runs coll's own schedules (one per rank, as the algorithms build them for
// the communicator) over a Fabric, at the level of flows: a step starts
// once the steps it depends on are done; a send becomes a flow along the
// route to its receiver after the per-message overhead, sharing every link
// with the flows in flight by max-min fairness, and arrives a path latency
// after its last byte leaves; a receive is done once its message arrived
// and it was posted, a reduction gamma per byte later.
#pragma once

#include "algorithms/schedule.h"
#include "sim/fabric.h"
#include "sim/symmetry.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace coll::sim {

// One step of one rank, as it ran.
struct StepTime {
  int rank = 0;
  int step = 0;
  algo::OpKind kind = algo::OpKind::kCopy;
  int peer = -1;
  int peer_step = -1;  // a send's receive, or a receive's send: its step on the peer
  size_t bytes = 0;
  double start_s = 0;  // its dependencies were done
  double end_s = 0;
};

struct Result {
  double seconds = 0;  // the last step's end
  size_t messages = 0;
  std::vector<double> link_bytes;  // carried, per link id
  int bottleneck = -1;             // the link busiest for longest (bytes / capacity), -1 with no traffic
  double bottleneck_busy_s = 0;
  int bottleneck_kind = -1;  // under a symmetry: the bottleneck's kind, every link of which is as busy
};

// schedules[r] is rank r's program. Sends and receives must pair up, in
// order and in size, as they do for every algorithm (tests/unit/schedule_test);
// kInvalidArgument names the first pair that does not, kInternal a schedule
// that cannot finish. With timeline, every step's times are appended.
// Called now and then while a simulation runs (every 65536 steps done).
using Progress = std::function<void(size_t steps_done, size_t steps_total, double simulated_s)>;

// With a symmetry, schedules are its representatives' (SymmetricPlan): each
// stands for its class, its messages for theirs, spread over the links of
// each kind they cross; link_bytes then holds each kind's per-link load on
// one link of it, and the timeline the representatives' steps.
Result simulate(const std::vector<algo::Schedule>& schedules, const Fabric& fabric, const Costs& costs,
                std::vector<StepTime>* timeline = nullptr, const Progress* progress = nullptr,
                const Symmetry* symmetry = nullptr);

}  // namespace coll::sim
