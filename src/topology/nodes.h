// Ranks grouped by node, and the rank orders that follow from it: what the
// communicator learns from every rank's host id at init, and what the
// topology-aware rings and halving-doubling are built on.
#pragma once

#include <string>
#include <vector>

namespace coll {

// The ranks of each node, from every rank's host id: nodes in the order of
// their first rank, launcher order inside a node.
std::vector<std::vector<int>> ranks_by_node(const std::vector<std::string>& hosts);
// The ranks node by node: the ring order that crosses between nodes fewest
// times. Empty when that is the launcher's order already.
std::vector<int> ring_by_node(const std::vector<std::vector<int>>& nodes);
// The ranks taking turns between nodes: the first of each node, then the
// second of each, ...: the order in which halving-doubling's largest
// exchanges (between the farthest positions) stay inside a node. Empty when
// that is the launcher's order already.
std::vector<int> spread_over_nodes(const std::vector<std::vector<int>>& nodes);

}  // namespace coll
