// The topology of one node as a graph (docs/ARCHITECTURE.md): a tree of
// containers (machine, packages, NUMA nodes, host bridges, PCIe bridges)
// holding devices (GPUs, NICs, NVSwitches), plus NVLinks between devices.
// Loaded from hwloc on the live machine or an hwloc XML export
// (hwloc_loader.cc), or from an NCCL topology XML (nccl_loader.cc); the
// planners and colltopo read only this.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace coll::topo {

// A PCI address, domain:bus:device.function; ordered as CUDA orders GPUs
// under CUDA_DEVICE_ORDER=PCI_BUS_ID.
struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0, device = 0, function = 0;

  std::string to_string() const;  // "0000:03:00.0"
  // "0000:03:00.0" or "03:00.0"; false on anything else.
  static bool parse(const std::string& text, PciAddress* out);
  auto operator<=>(const PciAddress&) const = default;
};

// CPU sets as the OS lists them ("0-5,48-53") and as flags (cpus[i]: CPU i
// is in the set). Parsing ignores malformed ranges and CPUs past 65535.
std::vector<bool> parse_cpu_list(const std::string& list);
std::string cpu_list(const std::vector<bool>& cpus);

enum class Kind {
  kMachine,
  kPackage,
  kNuma,
  kHostBridge,  // a PCI root complex (hwloc: bridge with a host upstream)
  kBridge,      // a PCI-to-PCI bridge: a switch's port or a root port
  kGpu,
  kNic,
  kNvSwitch,
  kPciDevice,  // any other PCI function (storage, BMC VGA, ...)
};
const char* kind_name(Kind kind);

// What a NIC speaks, as far as the description says.
enum class LinkLayer { kUnknown, kInfiniBand, kEthernet, kEfa };
const char* link_layer_name(LinkLayer layer);

struct Node {
  Kind kind = Kind::kMachine;
  int parent = -1;  // index in Topology::nodes; -1 for the root
  std::vector<int> children;
  int os_index = -1;   // packages and NUMA nodes: the OS's number
  std::string cpuset;  // packages and NUMA nodes: "0-5,48-53"
  PciAddress pci;      // PCI nodes
  bool has_pci = false;
  uint32_t vendor = 0, device_id = 0, pci_class = 0;  // pci_class: 0x0302 (class and subclass)
  float link_gbps = 0;                                // the PCIe link to its parent, GB/s (0: unknown)
  // Devices: what the OS calls them ("mlx5_0", "ib0", "nvml3"); NICs: the RDMA or net name first.
  std::vector<std::string> names;
  LinkLayer link_layer = LinkLayer::kUnknown;  // NICs
  bool rdma = false;                           // NICs: verbs (InfiniBand, RoCE) or EFA
};

struct NvLink {
  int a = -1, b = -1;  // node indices (GPU, NVSwitch or package)
  double gbps = 0;     // GB/s, one direction
};

struct Topology {
  std::string source;  // "hwloc (this machine)", a file name, ...
  std::vector<Node> nodes;
  std::vector<NvLink> nvlinks;
  int cores = 0, pus = 0;
  // The smallest share of an L2 cache a core has (a cache that k cores
  // share counts 1/k); 0 where the source does not say.
  size_t l2_bytes_per_core = 0;

  // Index lists, filled by finish(): GPUs in PCI bus id order (CUDA's
  // PCI_BUS_ID order), NICs in PCI order (those without a PCI address
  // last, in file order), NUMA nodes and packages by OS index.
  std::vector<int> gpus, nics, numas, packages;

  int add(Node node);  // appends under node.parent; returns its index
  void finish();       // sorts the index lists above
  // The NUMA node (index into nodes) a node hangs under, or -1.
  int numa_of(int node) const;
  int package_of(int node) const;
};

}  // namespace coll::topo
