// Emulated multi-node clusters on one machine: scripts/emulate-cluster.sh
// makes K network namespaces joined by a rate-limited bridge and lists them
// in COLL_NETNS_NODES ("name:ip name:ip ..."). A process placed on node i
// enters its namespace and takes its identity: COLL_HOSTID = the node's
// name (so shared memory is used inside a node and TCP between nodes) and
// COLL_SOCKET_IFNAME = its interface. collrun --nodes and the multi-rank
// tests place ranks this way.
#pragma once

#include <string>
#include <vector>

namespace coll::bootstrap {

struct EmulatedNode {
  std::string netns;  // /var/run/netns/<netns>
  std::string ip;     // its address on the emulated network
};

// COLL_NETNS_NODES parsed; empty when unset. kInvalidArgument if malformed.
std::vector<EmulatedNode> emulated_nodes();

// The interface every emulated node has (inside its namespace).
inline constexpr const char* kEmulatedInterface = "eth0";

// Moves this process into `node`'s network namespace and sets COLL_HOSTID
// and COLL_SOCKET_IFNAME. kSystem (needs root) when the namespace cannot be
// entered.
void enter_emulated_node(const EmulatedNode& node);

}  // namespace coll::bootstrap
