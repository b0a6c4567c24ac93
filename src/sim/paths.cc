#include "sim/paths.h"

#include "base/error.h"

#include <algorithm>
#include <tuple>

namespace coll::sim {

Paths::Paths(const Fabric& fabric, const Symmetry& sym, const Costs& costs)
    : fabric_(fabric), sym_(sym), costs_(costs) {
  if (costs.turn_s > 0) {
    ranks_on_core_.assign(static_cast<size_t>(fabric.num_links()), 0);
    for (int r = 0; r < fabric.nranks(); ++r)
      if (fabric.place(r).memory >= 0) ++ranks_on_core_[static_cast<size_t>(fabric.place(r).gpu_down)];
  }
  if (!symmetric()) {
    for (int l = 0; l < fabric.num_links(); ++l) capacity_.push_back(fabric.link(l).bytes_per_s);
    return;
  }
  group_of_link_.assign(static_cast<size_t>(fabric.num_links()), -1);
  std::map<std::tuple<int, double, int>, int> groups;
  for (int r = 0; r < fabric.nranks(); ++r) {
    const Fabric::Place& p = fabric.place(r);
    // A node's NICs group with those of nodes alike; the rest with all of their kind.
    std::vector<int> links{p.gpu_up, p.gpu_down, p.memory, p.nic_up, p.nic_down};
    links.insert(links.end(), p.group_up.begin(), p.group_up.end());
    links.insert(links.end(), p.group_down.begin(), p.group_down.end());
    for (int l : links) {
      if (l < 0 || group_of_link_[static_cast<size_t>(l)] >= 0) continue;
      const Link& link = fabric.link(l);
      if (link.kind < 0) fail(Code::kInternal, "simulate: link ", link.name, " has no kind; no symmetry applies");
      const int alike = l == p.nic_up || l == p.nic_down ? sym.alike_links(r) : -1;
      auto [it, added] = groups.try_emplace({link.kind, link.bytes_per_s, alike}, static_cast<int>(capacity_.size()));
      if (added) {
        capacity_.push_back(link.bytes_per_s);
        links_in_group_.push_back(0);
        example_.push_back(l);
      }
      group_of_link_[static_cast<size_t>(l)] = it->second;
      ++links_in_group_[static_cast<size_t>(it->second)];
    }
  }
}

std::vector<Hop> Paths::weighted_route(int from, int to, bool reducing) const {
  const std::vector<int> route = to == kLocal ? fabric_.local_route(from) : fabric_.route(from, to);
  std::vector<Hop> hops;
  for (int l : route) hops.push_back(Hop{l, 1});
  // CPU ranks: a local copy is [core, memory]; a message in the node [sender's core, memory, receiver's core].
  const int memory = fabric_.place(from).memory;
  if (memory < 0 || std::find(route.begin(), route.end(), memory) == route.end()) return hops;
  const double reduce = reducing ? costs_.reduce_weight : 1;
  if (to == kLocal) {
    for (Hop& h : hops) h.weight = costs_.local_weight * reduce;
  } else {
    hops.back().weight = reduce * (within_core(hops) ? costs_.same_core_read_weight : 1);
  }
  return hops;
}

double Paths::latency(const std::vector<Hop>& hops) const {
  double s = 0;
  for (const Hop& h : hops) s += fabric_.link(h.link).latency_s;
  // The receiver runs after its core's other ranks, from whichever core of the node the sender is on (a
  // message's last hop is the receiver's core inside a node; a NIC's, the memory's or none count no ranks).
  if (const int others =
          ranks_on_core_.empty() || hops.empty() ? 0 : ranks_on_core_[static_cast<size_t>(hops.back().link)] - 1;
      others > 0)
    s += costs_.turn_s * others;
  return s;
}

Path Paths::one(int unit, int to, bool reducing) const {
  Path p;
  p.hops = weighted_route(sym_.representative(unit), to, reducing);
  p.latency_s = latency(p.hops);
  return p;
}

Path Paths::spread(int cls, int peer, bool reducing) const {
  std::map<int, double> crossings;
  Path p;
  const int members = sym_.members(cls);
  double sum = 0, longest = 0;
  for (int k = 0; k < members; ++k) {
    const int m = sym_.member(cls, k);
    const std::vector<Hop> hops = weighted_route(m, peer == kLocal ? kLocal : sym_.image(cls, k, peer), reducing);
    for (const Hop& h : hops) crossings[group_of_link_[static_cast<size_t>(h.link)]] += h.weight;
    const double s = latency(hops);
    sum += s;
    longest = std::max(longest, s);
  }
  // Under a shift, the mean; a tree's class waits, level by level, for its slowest member: the longest.
  p.latency_s = sym_.listed() ? longest : sum / members;
  for (const auto& [group, n] : crossings)
    p.hops.push_back(Hop{group, n / links_in_group_[static_cast<size_t>(group)]});
  return p;
}

}  // namespace coll::sim
