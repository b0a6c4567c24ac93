// Path classes between two devices of a node, as NCCL names them, from the
// tree of a Topology (docs/TOPOLOGY.md):
//   NVL   an NVLink, direct or through one NVSwitch
//   PIX   a common PCIe switch, at most one bridge on each side
//   PXB   a common PCIe switch, more bridges on some side
//   PHB   a common host bridge
//   NODE  different host bridges of one NUMA node
//   SYS   different NUMA nodes (same_package tells AMD NPS4's case apart)
// Better classes compare smaller.
#pragma once

#include "topology/graph.h"

#include <string>
#include <vector>

namespace coll::topo {

enum class PathType { kNvl = 0, kPix, kPxb, kPhb, kNode, kSys };
const char* path_name(PathType type);

struct Path {
  PathType type = PathType::kSys;
  bool same_package = false;  // kSys only: both NUMA nodes are in one package
  double gbps = 0;            // the slowest link on the path, GB/s; 0 when unknown

  std::string to_string() const;  // "PIX", "SYS(same-pkg)"
};

// The path between devices a and b (node indices); with nvlink = false,
// the PCIe/CPU path even where an NVLink exists.
Path path_between(const Topology& topology, int a, int b, bool nvlink = true);

// For each GPU (in Topology::gpus order), the index into Topology::nics of
// the NIC it should use: the best path class first, then the NIC fewest
// GPUs already use, then the first. RDMA NICs are preferred over plain
// Ethernet when the node has any. Empty when the node has no NIC.
std::vector<int> nic_for_each_gpu(const Topology& topology);

// An order of the GPUs (indices into Topology::gpus) for a ring inside the
// node: from GPU 0, always on to the nearest GPU not yet visited, so that
// the ring follows NVLinks, then PCIe switches, then host bridges.
std::vector<int> gpu_ring(const Topology& topology);

}  // namespace coll::topo
