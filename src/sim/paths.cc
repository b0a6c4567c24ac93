#include "sim/paths.h"

#include "base/error.h"

namespace coll::sim {

Paths::Paths(const Fabric& fabric, const Symmetry& sym) : fabric_(fabric), sym_(sym) {
  if (!symmetric()) {
    for (int l = 0; l < fabric.num_links(); ++l) capacity_.push_back(fabric.link(l).bytes_per_s);
    return;
  }
  links_of_kind_.assign(static_cast<size_t>(fabric.num_kinds()), 0);
  capacity_.assign(static_cast<size_t>(fabric.num_kinds()), 0);
  example_.assign(static_cast<size_t>(fabric.num_kinds()), -1);
  std::vector<bool> seen(static_cast<size_t>(fabric.num_links()), false);
  for (int r = 0; r < fabric.nranks(); ++r) {
    const Fabric::Place& p = fabric.place(r);
    std::vector<int> links{p.gpu_up, p.gpu_down, p.nic_up, p.nic_down};
    links.insert(links.end(), p.group_up.begin(), p.group_up.end());
    links.insert(links.end(), p.group_down.begin(), p.group_down.end());
    for (int l : links) {
      if (l < 0 || seen[static_cast<size_t>(l)]) continue;
      seen[static_cast<size_t>(l)] = true;
      const Link& link = fabric.link(l);
      if (link.kind < 0) fail(Code::kInternal, "simulate: link ", link.name, " has no kind; no symmetry applies");
      const size_t k = static_cast<size_t>(link.kind);
      ++links_of_kind_[k];
      capacity_[k] += link.bytes_per_s;
      if (example_[k] < 0) example_[k] = l;
    }
  }
  for (size_t k = 0; k < capacity_.size(); ++k)
    if (links_of_kind_[k] > 0) capacity_[k] /= links_of_kind_[k];
}

Path Paths::one(int from, int to) const {
  Path p;
  const std::vector<int> route = fabric_.route(from, to);
  for (int l : route) p.hops.push_back(Hop{l, 1});
  p.latency_s = fabric_.latency(route);
  return p;
}

Path Paths::spread(int rep, int peer) const {
  std::map<int, double> crossings;
  for (int k = 0; k < sym_.members(); ++k) {
    const int m = sym_.member(sym_.class_of(rep), k);
    for (int l : fabric_.route(m, sym_.image(m, peer))) crossings[fabric_.link(l).kind] += 1;
  }
  Path p = one(rep, peer);
  p.hops.clear();
  for (const auto& [kind, n] : crossings) p.hops.push_back(Hop{kind, n / links_of_kind_[static_cast<size_t>(kind)]});
  return p;
}

}  // namespace coll::sim
