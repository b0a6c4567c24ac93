// A cluster description (JSON; examples/clusters/, docs/SIMULATION.md) and
// the Fabric it makes: nodes of GPUs on a switch of their own (NVLink),
// each GPU's traffic between nodes through a NIC, the NICs on leaf switches
// (by node, or rail-optimised: NIC i of every node on the leaves of rail i),
// and levels of switch groups above, each with its oversubscription.
#pragma once

#include "sim/fabric.h"

#include <cstddef>
#include <string>
#include <vector>

namespace coll::sim {

struct Cluster {
  std::string name;
  int nodes = 0;
  int gpus_per_node = 0;
  int nics_per_node = 0;
  double gpu_link_bytes_per_s = 0;  // each GPU to its node's switch, each way
  double nic_bytes_per_s = 0;
  // A node's memory, which every message between two of its ranks also
  // crosses (CPU ranks over shared memory); 0: none (GPUs on NVLink switches).
  double memory_bytes_per_s = 0;
  // CPU ranks whose buffers the node's cache holds move them faster: up to
  // cache_bytes of all its ranks' buffers at cache_bytes_per_s (the node's
  // memory faster alike); 0: no cache. A second, larger cache holds up to
  // cache2_bytes at cache2_bytes_per_s (algo::LinkModel::at_size).
  double cache_bytes = 0, cache_bytes_per_s = 0;
  double cache2_bytes = 0, cache2_bytes_per_s = 0;
  // The cores of a node of CPU ranks: rank i of a node runs on core
  // i % cores, whose one link carries what all its ranks copy; 0: a core each.
  int cores = 0;
  // The link classes a tuning file names (coll's transports: "shm", "tcp"):
  // inside a node and between nodes.
  std::string node_class = "gpu", network_class = "net";
  size_t chunk_bytes = 512 << 10;  // the algorithms' pipelining unit
  Costs costs;
  Fabric fabric;
  // Each switch level's groups' links up and down (leaves first), of the whole cluster.
  std::vector<std::vector<int>> uplinks, downlinks;
};

struct Tuning;  // sim/tuning.h

// Parses `text` (the file's contents; `origin` names it in errors) into a
// cluster of its first `ranks` GPUs (0: all), with the tuning's parameters
// of its two link classes over the file's (the node class's alpha, gamma,
// rate, memory and cache; the network class's rate, and its alpha beyond
// the node's as the NICs' latency). A missing or wrong field, or a bad
// tuning line, is kInvalidArgument naming the field or line and what is
// expected.
Cluster parse_cluster(const std::string& text, const std::string& origin, int ranks = 0,
                      const Tuning* tuning = nullptr);
// tuning_path empty: none.
Cluster load_cluster(const std::string& path, int ranks = 0, const std::string& tuning_path = "");

// One cable of a network link fails, both ways: "node3.nic5" (the NIC's
// only cable: nothing passes any more) or "leaf12" (one of its uplinks:
// the rest carry on, ECMP spreading over them). The cluster file's
// failed_links are applied so. kInvalidArgument for a name not in f.
void fail_cable(Fabric& f, const std::string& name, const std::string& origin);

}  // namespace coll::sim
