// Where a rank should run: the NUMA node of its GPU (local rank i takes
// GPU i when each has one), else its share of the node's NUMA nodes (local
// rank i of L: nodes i*N/L up to (i+1)*N/L, at least one; a single rank
// keeps them all); and the NIC its GPU pairs with. Binding pins the calling
// thread to that NUMA node's CPUs, unless the launcher already pinned it
// more narrowly (mpirun --bind-to core) or COLL_BIND=0.
#pragma once

#include "topology/graph.h"

#include <string>

namespace coll::topo {

struct Placement {
  int numa = -1;     // OS index (the first of its share), -1: none known
  std::string cpus;  // the CPUs of its NUMA node(s), "0-5,48-53"
  int gpu = -1;      // index in Topology::gpus, -1: none
  std::string nic;   // the GPU's NIC's first name, "" when none
};

Placement place(const Topology& topology, int local_rank, int local_size);

// Pins the calling thread to placement.cpus intersected with the CPUs it may
// use now. Returns what was done, for the log: "bound to ...", or why not.
std::string bind_to(const Placement& placement);

}  // namespace coll::topo
