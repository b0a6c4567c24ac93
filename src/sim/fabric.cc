#include "sim/fabric.h"

#include "base/error.h"

namespace coll::sim {

int Fabric::add_link(std::string name, double bytes_per_s, double latency_s, int cables, const std::string& kind) {
  int id = -1;
  if (!kind.empty()) {
    auto [it, added] = kind_ids_.try_emplace(kind, static_cast<int>(kinds_.size()));
    if (added) kinds_.push_back(kind);
    id = it->second;
  }
  links_.push_back(Link{std::move(name), bytes_per_s, latency_s, cables, cables > 0, id});
  return static_cast<int>(links_.size()) - 1;
}

int Fabric::find(const std::string& name) const {
  for (size_t l = 0; l < links_.size(); ++l)
    if (links_[l].name == name) return static_cast<int>(l);
  return -1;
}

std::vector<int> Fabric::route(int a, int b) const {
  const Place& from = place(a);
  const Place& to = place(b);
  if (from.node == to.node) {
    if (from.memory >= 0) return {from.gpu_up, from.memory, to.gpu_down};
    return {from.gpu_up, to.gpu_down};
  }
  std::vector<int> path{from.nic_up};
  // Climb until one group holds both ends (the top level holds everyone).
  size_t level = 0;
  while (level < from.group.size() && from.group[level] != to.group[level]) ++level;
  for (size_t l = 0; l < level; ++l) path.push_back(from.group_up[l]);
  for (size_t l = level; l-- > 0;) path.push_back(to.group_down[l]);
  path.push_back(to.nic_down);
  return path;
}

std::vector<int> Fabric::local_route(int a) const {
  const Place& p = place(a);
  if (p.memory < 0) return {};
  return {p.gpu_up, p.memory};
}

double Fabric::latency(const std::vector<int>& route) const {
  double s = 0;
  for (int id : route) s += link(id).latency_s;
  return s;
}

}  // namespace coll::sim
