// Choosing the source of the topology, and writing it back out.
#include "topology/load.h"
#include "base/config.h"
#include "base/error.h"
#include "base/log.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace coll::topo {

Topology load_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(Code::kInvalidArgument, "topology file ", path, ": cannot open it");
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  // The root element tells the formats apart: hwloc's <topology>, NCCL's <system>.
  if (head.find("<system") != std::string::npos) return load_nccl_xml(path);
  if (head.find("<topology") != std::string::npos) return load_hwloc_xml(path);
  fail(Code::kInvalidArgument, "topology file ", path,
       ": neither an hwloc XML export (<topology>) nor an NCCL topology file (<system>)");
}

Topology load_configured() {
  const std::string file = config::get_string("COLL_TOPO_FILE");
  Topology t = file.empty() ? load_live() : load_file(file);
  const std::string dump = config::get_string("COLL_TOPO_DUMP_FILE");
  if (!dump.empty()) {
    std::ofstream out(dump);
    out << to_nccl_xml(t);
    if (!out) fail(Code::kSystem, "COLL_TOPO_DUMP_FILE=", dump, ": cannot write it");
    log::info(log::kInit, "topology (", t.source, ") written to ", dump);
  }
  return t;
}

const Topology& node_topology() {
  static const Topology topology = [] {
    try {
      return load_configured();
    } catch (const Error& e) {
      if (!config::get_string("COLL_TOPO_FILE").empty()) throw;
      log::warn(log::kInit, "topology: ", e.what(), "; going on as one NUMA node");
      Topology flat;
      flat.source = "none (hwloc failed)";
      Node machine;
      const int root = flat.add(machine);
      Node numa;
      numa.kind = Kind::kNuma;
      numa.parent = root;
      numa.os_index = 0;
      numa.cpuset = "0-" + std::to_string(std::max(0L, sysconf(_SC_NPROCESSORS_ONLN) - 1));
      flat.add(numa);
      flat.finish();
      return flat;
    }
  }();
  return topology;
}

namespace {

// "0-5,48-53" -> "003f0000,0000003f" (NCCL's affinity: 32-bit words, most significant first).
std::string list_to_affinity(const std::string& list) {
  const std::vector<bool> cpus = parse_cpu_list(list);
  std::vector<uint32_t> words((cpus.size() + 31) / 32 + (cpus.empty() ? 1 : 0), 0);
  for (size_t cpu = 0; cpu < cpus.size(); ++cpu)
    if (cpus[cpu]) words[cpu / 32] |= 1u << (cpu % 32);
  std::string out;
  for (size_t i = words.size(); i-- > 0;) {
    char word[16];
    std::snprintf(word, sizeof(word), "%08x", words[i]);
    if (!out.empty()) out += ',';
    out += word;
  }
  return out;
}

// GPU `gpu`'s NVLinks as NCCL writes them: <nvlink target="busid"
// count="links" tclass="0x030200" (a GPU) or "0x068000" (an NVSwitch)/>,
// plus our gbps="..." (NCCL ignores it; we read it back instead of guessing
// 20 GB/s per link). A link between two GPUs is written at the first only;
// one to an NVSwitch without a PCI address names kImpliedSwitch. Links to a
// CPU package (POWER) are not in the format.
std::string nvlinks_of(const Topology& t, int gpu) {
  std::ostringstream out;
  for (const NvLink& l : t.nvlinks) {
    if (l.a != gpu && l.b != gpu) continue;
    const int other = l.a == gpu ? l.b : l.a;
    const Node& o = t.nodes[static_cast<size_t>(other)];
    if (o.kind == Kind::kGpu && other < gpu) continue;
    if (o.kind != Kind::kGpu && o.kind != Kind::kNvSwitch) continue;
    const std::string target = o.has_pci ? o.pci.to_string() : kImpliedSwitch;
    const long count = std::max(1L, std::lround(l.gbps / 20.0));
    out << "<nvlink target=\"" << target << "\" count=\"" << count << "\" tclass=\""
        << (o.kind == Kind::kGpu ? "0x030200" : "0x068000") << "\" gbps=\"" << l.gbps << "\"/>";
  }
  return out.str();
}

void write_node(const Topology& t, int index, int depth, std::ostringstream& out) {
  const Node& n = t.nodes[static_cast<size_t>(index)];
  const std::string pad(static_cast<size_t>(depth) * 2, ' ');
  auto children = [&](int d) {
    for (int c : n.children) write_node(t, c, d, out);
  };
  switch (n.kind) {
    case Kind::kNvSwitch:
      if (!n.has_pci) return;  // the NVSwitch an NCCL file's links imply: its GPUs' links name it
      break;
    case Kind::kHostBridge:
    case Kind::kMachine:
    case Kind::kPackage:
      children(depth);  // not in the format: their children move up
      return;
    case Kind::kBridge:
      // The format has one element per switch: the topmost bridge of a chain
      // stands for it, the bridges below it (its ports, nested switches)
      // are left out and their devices move up. Nested switches thus read
      // back as one (PXB becomes PIX).
      if (!n.has_pci || (n.parent >= 0 && t.nodes[static_cast<size_t>(n.parent)].kind == Kind::kBridge)) {
        children(depth);
        return;
      }
      break;
    case Kind::kNuma:
      out << pad << "<cpu numaid=\"" << n.os_index << "\" affinity=\"" << list_to_affinity(n.cpuset) << "\">\n";
      children(depth + 1);
      out << pad << "</cpu>\n";
      return;
    default:
      break;
  }
  if (!n.has_pci) {  // a NIC without a PCI address
    out << pad << "<nic>";
    for (const auto& name : n.names) out << "<net name=\"" << name << "\"/>";
    out << "</nic>\n";
    return;
  }
  char cls[16], ids[64];
  // What we decided, so that it reads back the same: an NVSwitch whose
  // config space was unreadable (DGX-2 has one) is still written as one.
  const bool nvswitch = n.kind == Kind::kNvSwitch;
  std::snprintf(cls, sizeof(cls), "0x%04x00", nvswitch ? 0x0680u : n.pci_class);
  std::snprintf(ids, sizeof(ids), "vendor=\"0x%04x\" device=\"0x%04x\"", nvswitch ? 0x10deu : n.vendor, n.device_id);
  out << pad << "<pci busid=\"" << n.pci.to_string() << "\" class=\"" << cls << "\" " << ids;
  if (n.link_gbps > 0) out << " link_gbps=\"" << n.link_gbps << "\"";
  const bool nic_info = n.kind == Kind::kNic && !n.names.empty();
  const std::string links = n.kind == Kind::kGpu ? nvlinks_of(t, index) : "";
  if (n.children.empty() && !nic_info && links.empty()) {
    out << "/>\n";
    return;
  }
  out << ">\n";
  if (nic_info) {
    out << pad << "  <nic>";
    for (const auto& name : n.names) out << "<net name=\"" << name << "\"/>";
    out << "</nic>\n";
  }
  if (!links.empty()) out << pad << "  <gpu>" << links << "</gpu>\n";
  children(depth + 1);
  out << pad << "</pci>\n";
}

}  // namespace

std::string to_nccl_xml(const Topology& t) {
  std::ostringstream out;
  out << "<system version=\"1\">\n";
  if (!t.nodes.empty()) write_node(t, 0, 1, out);
  out << "</system>\n";
  return out.str();
}

}  // namespace coll::topo
