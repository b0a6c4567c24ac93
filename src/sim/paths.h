// What a message crosses in a simulation, and its latency (engine.cc).
#pragma once

#include "sim/fabric.h"
#include "sim/maxmin.h"
#include "sim/symmetry.h"

#include <map>
#include <string>
#include <tuple>
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
  // Under a symmetry: groups the links the ranks reach by kind and capacity.
  Paths(const Fabric& fabric, const Symmetry& sym, const Costs& costs);

  bool symmetric() const { return !sym_.none(); }
  // Per link, or per group of links.
  const std::vector<double>& capacity() const { return capacity_; }
  // The link a group's numbers are shown on (one of it; all carry the same).
  int example(int hop) const { return symmetric() ? example_[static_cast<size_t>(hop)] : hop; }
  // The fabric's kind of a hop's links.
  int kind(int hop) const { return fabric_.link(example(hop)).kind; }
  std::string hop_name(int hop) const { return symmetric() ? fabric_.kind_name(kind(hop)) : fabric_.link(hop).name; }

  // peer kLocal: the unit's local copies and reductions (Fabric::local_route).
  static constexpr int kLocal = -1;
  // A unit is a rank, or under a symmetry a class (its representative's peer).
  // reducing: a message its receiver reduces, or a local reduction (CPU
  // ranks weigh its bytes more: Costs::reduce_weight).
  const Path& of(int unit, int peer, bool reducing = false) {
    reducing = reducing && costs_.reduce_weight != 1;  // else the same path: one entry, one walk
    auto [it, added] = cache_.try_emplace({unit, peer, reducing});
    if (added) it->second = symmetric() ? spread(unit, peer, reducing) : one(unit, peer, reducing);
    return it->second;
  }

 private:
  // The links from rank `from` to rank `to` (or kLocal), each with the
  // weight of the bytes crossing it (Costs' CPU weights; 1 elsewhere).
  std::vector<Hop> weighted_route(int from, int to, bool reducing) const;
  // A message between two CPU ranks of one core: [core, memory, core].
  static bool within_core(const std::vector<Hop>& hops) {
    return hops.size() > 1 && hops.front().link == hops.back().link;
  }
  // The links' latencies, and a message inside a node to a rank of a shared core its turn (Costs::turn_s).
  double latency(const std::vector<Hop>& hops) const;
  Path one(int unit, int to, bool reducing) const;
  // Every member's message of class cls, counted by group; the mean latency
  // (the longest under listed classes).
  Path spread(int cls, int peer, bool reducing) const;

  const Fabric& fabric_;
  const Symmetry& sym_;
  const Costs costs_;
  std::vector<double> capacity_;
  // By link: the CPU ranks whose core it is (0 for every other link; with Costs::turn_s only).
  std::vector<int> ranks_on_core_;
  // Links of one kind and one capacity form a group (a failed cable, a
  // partly filled leaf: a group of their own), which shares its load evenly;
  // a node's NICs only with those of nodes alike (Symmetry::alike_links).
  std::vector<int> group_of_link_;
  std::vector<double> links_in_group_;
  std::vector<int> example_;
  std::map<std::tuple<int, int, bool>, Path> cache_;
};

}  // namespace coll::sim
