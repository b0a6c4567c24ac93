#include "sim/paths.h"

#include "base/error.h"

#include <algorithm>
#include <tuple>

namespace coll::sim {

Paths::Paths(const Fabric& fabric, const Symmetry& sym) : fabric_(fabric), sym_(sym) {
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

Path Paths::one(int unit, int to) const {
  const int from = sym_.representative(unit);
  Path p;
  const std::vector<int> route = to == kLocal ? fabric_.local_route(from) : fabric_.route(from, to);
  for (int l : route) p.hops.push_back(Hop{l, 1});
  p.latency_s = fabric_.latency(route);
  return p;
}

Path Paths::spread(int cls, int peer) const {
  std::map<int, double> crossings;
  Path p;
  const int members = sym_.members(cls);
  double sum = 0, longest = 0;
  for (int k = 0; k < members; ++k) {
    const int m = sym_.member(cls, k);
    const std::vector<int> route = peer == kLocal ? fabric_.local_route(m) : fabric_.route(m, sym_.image(cls, k, peer));
    for (int l : route) crossings[group_of_link_[static_cast<size_t>(l)]] += 1;
    const double latency = fabric_.latency(route);
    sum += latency;
    longest = std::max(longest, latency);
  }
  // Under a shift, the mean; a tree's class waits, level by level, for its slowest member: the longest.
  p.latency_s = sym_.listed() ? longest : sum / members;
  for (const auto& [group, n] : crossings)
    p.hops.push_back(Hop{group, n / links_in_group_[static_cast<size_t>(group)]});
  return p;
}

}  // namespace coll::sim
