// How often a cluster's network loses a cable, and what one lost cable
// costs a collective: the expected time to the first failure among all the
// cables (each failing at random, with one mean time to failure), and each
// algorithm's time with one uplink cable of its busiest switch link gone.
#pragma once

#include "sim/collective_run.h"

#include <string>
#include <vector>

namespace coll::sim {

struct Cables {
  long nic = 0;               // NIC to leaf, one per NIC of every node
  std::vector<long> uplinks;  // each switch level's cables up
  long total() const;
};
Cables count_cables(const Cluster& cluster);

// Hours until the first of n cables fails, on average, when each fails
// after mttf_hours on average (exponential lifetimes: the minimum of n has
// mean mttf / n).
inline double first_failure_hours(long cables, double mttf_hours) { return mttf_hours / static_cast<double>(cables); }

struct Degraded {
  std::string algorithm;
  double healthy_s = 0;
  double failed_s = 0;
  std::string failed_link;    // "" when no switch link carried anything (one node)
  std::string not_simulated;  // why, where the algorithm is too big to simulate here
};

// For each algorithm: its time, and its time with one cable gone from the
// switch uplink of more than one cable that carried the most in the healthy
// run (failed_link stays empty where no such link carried anything).
std::vector<Degraded> one_cable_lost(const Cluster& cluster, const CollectiveRun& run,
                                     const std::vector<std::string>& algorithms);

}  // namespace coll::sim
