// Where a Topology comes from. Errors are coll::Error (kInvalidArgument
// naming the file and what is wrong with it; kSystem when hwloc fails on
// the live machine).
#pragma once

#include "topology/graph.h"

#include <string>

namespace coll::topo {

// hwloc on this machine, with I/O devices kept.
Topology load_live();
// An hwloc XML export (v1 or v2 format; hwloc 2.x refuses v3).
Topology load_hwloc_xml(const std::string& path);
// An NCCL topology file (NCCL_TOPO_FILE format, <system version="1">).
Topology load_nccl_xml(const std::string& path);
// Either kind of file, told apart by its root element.
Topology load_file(const std::string& path);
// COLL_TOPO_FILE when set, else the live machine; writes the result to
// COLL_TOPO_DUMP_FILE when that is set.
Topology load_configured();
// load_configured(), once per process (thread-safe). hwloc failing on the
// live machine gives a topology of one NUMA node with every CPU, and a
// warning; a bad COLL_TOPO_FILE is an error.
const Topology& node_topology();

// The graph in NCCL's topology format (what COLL_TOPO_DUMP_FILE holds), so
// that both coll and NCCL can read it back. Host bridges and packages are
// not in that format: devices under different host bridges of one NUMA node
// read back as PHB rather than NODE.
std::string to_nccl_xml(const Topology& topology);

// The bus id an NVLink names when it goes to an NVSwitch the file has no
// <pci> element for (NCCL's own dumps of NVSwitch systems do that).
inline constexpr const char* kImpliedSwitch = "ffff:ff:1f.7";

}  // namespace coll::topo
