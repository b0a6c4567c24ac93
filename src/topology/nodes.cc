#include "topology/nodes.h"

#include <algorithm>

namespace coll {
namespace {

std::vector<int> unless_identity(std::vector<int> order) {
  for (int r = 0; r < static_cast<int>(order.size()); ++r)
    if (order[static_cast<size_t>(r)] != r) return order;
  return {};
}

}  // namespace

std::vector<std::vector<int>> ranks_by_node(const std::vector<std::string>& hosts) {
  std::vector<std::string> seen;
  std::vector<std::vector<int>> members;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r) {
    const std::string& host = hosts[static_cast<size_t>(r)];
    size_t h = static_cast<size_t>(std::find(seen.begin(), seen.end(), host) - seen.begin());
    if (h == seen.size()) seen.push_back(host), members.emplace_back();
    members[h].push_back(r);
  }
  return members;
}

// A ring in this order crosses between nodes once per node whatever order
// the launcher chose; an interleaved placement in launcher order would
// cross at every step.
std::vector<int> ring_by_node(const std::vector<std::vector<int>>& nodes) {
  std::vector<int> order;
  for (const auto& m : nodes) order.insert(order.end(), m.begin(), m.end());
  return unless_identity(order);
}

// With nodes of equal size L and N = 2^k nodes, position p = i*N + node:
// the farthest positions (p xor 2^j, large j) differ in i, the same node.
std::vector<int> spread_over_nodes(const std::vector<std::vector<int>>& nodes) {
  size_t ranks = 0;
  for (const auto& m : nodes) ranks += m.size();
  std::vector<int> order;
  for (size_t i = 0; order.size() < ranks; ++i)
    for (const auto& m : nodes)
      if (i < m.size()) order.push_back(m[i]);
  return unless_identity(order);
}

}  // namespace coll
