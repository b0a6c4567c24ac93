// The teaching view of an algorithm: who sends which elements to whom in
// each round and what the receiver does with them, as the schedules say,
// timed by the simulator; then the algorithm's alpha-beta-gamma cost with
// the numbers filled in, next to the simulated time.
#pragma once

#include "sim/collective_run.h"

#include <string>
#include <vector>

namespace coll::sim {

struct Transfer {
  int from = 0, to = 0;
  algo::Region src, dst;  // the sender's bytes, and where the receiver puts them
  size_t bytes = 0;
  bool reduce = false;  // the receiver reduces them into dst (else copies)
  double start_s = 0, end_s = 0;
};

// Transfers that start at the same moment; in a synchronous algorithm on a
// uniform fabric, one step of every rank.
struct Round {
  double start_s = 0, end_s = 0;
  std::vector<Transfer> transfers;
};

struct Explanation {
  Plan plan;
  Result result;
  std::vector<Round> rounds;
};

Explanation explain(const Cluster& cluster, const CollectiveRun& run);

// The rounds in words, then the cost formula with n, S, a, b and g filled in.
std::string explain_text(const Explanation& e, const CollectiveRun& run);

// The rounds as an animated SVG (SMIL, no script), one round after the
// other, looping: the ranks on a circle, each transfer an arrow labelled with
// its elements, red where the receiver reduces, blue where it copies.
std::string explain_svg(const Explanation& e, const CollectiveRun& run);

// A cluster of one kind of link for teaching: `ranks` GPUs, `per_node` on a
// node (0: all on one), every link 100 Gbit/s with 1 us latency, 5 us per message.
Cluster teaching_cluster(int ranks, int per_node);

}  // namespace coll::sim
