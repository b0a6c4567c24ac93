// busbw against size for every algorithm of a collective on a cluster, the
// sizes where the fastest algorithm changes, and the plot of it as SVG.
#pragma once

#include "sim/collective_run.h"

#include <cstddef>
#include <string>
#include <vector>

namespace coll::sim {

struct Sweep {
  std::vector<std::string> algorithms;
  std::vector<size_t> sizes;
  std::vector<std::vector<double>> busbw;  // [size][algorithm], bytes per second
  std::vector<std::string> auto_choice;    // [size]: coll's selector's pick
  struct Crossover {
    size_t bytes;  // the first size at which `to` is the fastest
    std::string from, to;
  };
  std::vector<Crossover> crossovers;
};

// The algorithms a collective can run with on this cluster (not the direct
// allreduce across nodes, which coll never picks there).
std::vector<std::string> algorithms_for(const Cluster& cluster, algo::Collective c);

// Sizes min_bytes, 4 min_bytes, ... up to max_bytes (and max_bytes itself).
Sweep sweep(const Cluster& cluster, const CollectiveRun& base, size_t min_bytes, size_t max_bytes,
            const std::vector<std::string>& algorithms);

// A self-contained SVG: busbw (GB/s) against size (log scale), a line per
// algorithm, the crossovers marked and named.
std::string sweep_svg(const Sweep& s, const std::string& title);

}  // namespace coll::sim
