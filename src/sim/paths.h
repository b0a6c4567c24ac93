// What a message crosses in a simulation, and its latency (engine.cc).
#pragma once

#include "sim/fabric.h"
#include "sim/maxmin.h"
#include "sim/symmetry.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace coll::sim {

// What a message crosses, and its latency. Without a symmetry: the links
// of its route, once each. With one: the kinds of links its whole class's
// messages cross, each weighted by how many of them share a link of the
// kind when they spread evenly over its links.
struct Path {
  std::vector<Hop> hops;
  double latency_s = 0;
};

class Paths {
 public:
  // Each kind's links among those the ranks reach, and their mean capacity, under a symmetry.
  Paths(const Fabric& fabric, const Symmetry& sym);

  bool symmetric() const { return sym_.members() > 1; }
  // Per link, or per kind of link.
  const std::vector<double>& capacity() const { return capacity_; }
  // The link a kind's numbers are shown on (one it has; the same for all).
  int example(int hop) const { return symmetric() ? example_[static_cast<size_t>(hop)] : hop; }
  std::string hop_name(int hop) const { return symmetric() ? fabric_.kind_name(hop) : fabric_.link(hop).name; }

  const Path& of(int unit, int peer) {
    auto [it, added] = cache_.try_emplace({unit, peer});
    if (added) it->second = symmetric() ? spread(unit, peer) : one(unit, peer);
    return it->second;
  }

 private:
  Path one(int from, int to) const;
  // Every member's message of the representative's class, counted by kind.
  Path spread(int rep, int peer) const;

  const Fabric& fabric_;
  const Symmetry& sym_;
  std::vector<double> capacity_;
  std::vector<double> links_of_kind_;
  std::vector<int> example_;
  std::map<std::pair<int, int>, Path> cache_;
};

}  // namespace coll::sim
