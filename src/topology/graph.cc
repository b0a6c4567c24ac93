#include "topology/graph.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <tuple>

namespace coll::topo {

std::string PciAddress::to_string() const {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return text;
}

bool PciAddress::parse(const std::string& text, PciAddress* out) {
  // Hex digits, ':' and '.' only (sscanf's %x would also take "0x").
  if (text.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return false;
  PciAddress a;
  int used = -1;
  const int n = static_cast<int>(text.size());
  bool ok = (std::sscanf(text.c_str(), "%x:%x:%x.%x%n", &a.domain, &a.bus, &a.device, &a.function, &used) == 4 &&
             used == n) ||
            (a.domain = 0, used = -1,
             std::sscanf(text.c_str(), "%x:%x.%x%n", &a.bus, &a.device, &a.function, &used) == 3 && used == n);
  if (!ok || a.domain > 0xffff || a.bus > 0xff || a.device > 0x1f || a.function > 7) return false;
  *out = a;
  return true;
}

std::vector<bool> parse_cpu_list(const std::string& list) {
  std::vector<bool> cpus;
  size_t start = 0;
  while (start < list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string range = list.substr(start, comma - start);
    start = comma + 1;
    if (range.empty() || !std::isdigit(static_cast<unsigned char>(range[0]))) continue;
    const size_t dash = range.find('-');
    const long first = std::atol(range.c_str()),
               last = dash == std::string::npos ? first : std::atol(range.c_str() + dash + 1);
    for (long cpu = first; cpu <= last && cpu < 65536; ++cpu) {
      if (static_cast<size_t>(cpu) >= cpus.size()) cpus.resize(static_cast<size_t>(cpu) + 1, false);
      cpus[static_cast<size_t>(cpu)] = true;
    }
  }
  return cpus;
}

std::string cpu_list(const std::vector<bool>& cpus) {
  std::string out;
  for (size_t cpu = 0; cpu < cpus.size(); ++cpu) {
    if (!cpus[cpu] || (cpu > 0 && cpus[cpu - 1])) continue;
    size_t last = cpu;
    while (last + 1 < cpus.size() && cpus[last + 1]) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) out += '-', out += std::to_string(last);
  }
  return out;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kMachine:
      return "machine";
    case Kind::kPackage:
      return "package";
    case Kind::kNuma:
      return "numa";
    case Kind::kHostBridge:
      return "host bridge";
    case Kind::kBridge:
      return "bridge";
    case Kind::kGpu:
      return "gpu";
    case Kind::kNic:
      return "nic";
    case Kind::kNvSwitch:
      return "nvswitch";
    case Kind::kPciDevice:
      return "pci device";
  }
  return "?";
}

const char* link_layer_name(LinkLayer layer) {
  switch (layer) {
    case LinkLayer::kInfiniBand:
      return "InfiniBand";
    case LinkLayer::kEthernet:
      return "Ethernet";
    case LinkLayer::kEfa:
      return "EFA";
    case LinkLayer::kUnknown:
      break;
  }
  return "unknown";
}

int Topology::add(Node node) {
  const int index = static_cast<int>(nodes.size());
  const int parent = node.parent;
  nodes.push_back(std::move(node));
  if (parent >= 0) nodes[static_cast<size_t>(parent)].children.push_back(index);
  return index;
}

void Topology::finish() {
  gpus.clear(), nics.clear(), numas.clear(), packages.clear();
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    Kind k = nodes[static_cast<size_t>(i)].kind;
    if (k == Kind::kGpu) gpus.push_back(i);
    if (k == Kind::kNic) nics.push_back(i);
    if (k == Kind::kNuma) numas.push_back(i);
    if (k == Kind::kPackage) packages.push_back(i);
  }
  auto by_pci = [&](int a, int b) {
    const Node &x = nodes[static_cast<size_t>(a)], &y = nodes[static_cast<size_t>(b)];
    return std::make_tuple(!x.has_pci, x.pci, a) < std::make_tuple(!y.has_pci, y.pci, b);
  };
  auto by_os = [&](int a, int b) {
    return nodes[static_cast<size_t>(a)].os_index < nodes[static_cast<size_t>(b)].os_index;
  };
  std::sort(gpus.begin(), gpus.end(), by_pci);
  std::sort(nics.begin(), nics.end(), by_pci);
  std::stable_sort(numas.begin(), numas.end(), by_os);
  std::stable_sort(packages.begin(), packages.end(), by_os);
}

int Topology::numa_of(int node) const {
  for (int i = node; i >= 0; i = nodes[static_cast<size_t>(i)].parent)
    if (nodes[static_cast<size_t>(i)].kind == Kind::kNuma) return i;
  return -1;
}

int Topology::package_of(int node) const {
  for (int i = node; i >= 0; i = nodes[static_cast<size_t>(i)].parent)
    if (nodes[static_cast<size_t>(i)].kind == Kind::kPackage) return i;
  return -1;
}

}  // namespace coll::topo
