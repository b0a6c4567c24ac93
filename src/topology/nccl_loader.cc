// Topology from an NCCL topology file (NCCL_TOPO_FILE), the format clouds
// ship because a VM's PCIe tree is flattened or hidden:
//   <system version="1">
//     <cpu numaid="0" affinity="0000ffff,ffffffff" arch="x86_64" ...>
//       <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
//         <pci busid="0001:00:00.0" class="0x030200" .../>      a GPU
//         <pci busid="0101:00:00.0" class="0x020700" .../>      an InfiniBand NIC
//       </pci>
//       <nic><net name="eth0" speed="100000" .../></nic>        a NIC without PCI
//     </cpu>
//   </system>
// Mapped onto our tree: each <cpu> is a NUMA node holding one host bridge
// (NCCL's CPU node: PCI trees under one CPU meet there, PHB); a switch
// element (class 0x0604) is an upstream bridge with one downstream-port
// bridge per child, so that "PIX: at most one bridge on each side" reads the
// same as on hwloc's trees.
#include "base/error.h"
#include "topology/load.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace coll::topo {
namespace {

std::string attr(xmlNode* n, const char* name) {
  xmlChar* v = xmlGetProp(n, reinterpret_cast<const xmlChar*>(name));
  if (v == nullptr) return "";
  std::string out(reinterpret_cast<char*>(v));
  xmlFree(v);
  return out;
}

bool named(xmlNode* n, const char* name) {
  return n->type == XML_ELEMENT_NODE && xmlStrcmp(n->name, reinterpret_cast<const xmlChar*>(name)) == 0;
}

uint32_t hex(const std::string& text) {
  return text.empty() ? 0 : static_cast<uint32_t>(std::strtoul(text.c_str(), nullptr, 16));
}

// "0000ffff,ffffffff" (32-bit words, most significant first) -> "0-47".
std::string affinity_to_list(const std::string& mask) {
  std::vector<uint32_t> words;  // least significant first
  size_t start = 0;
  while (start <= mask.size()) {
    size_t comma = mask.find(',', start);
    if (comma == std::string::npos) comma = mask.size();
    words.insert(words.begin(), hex(mask.substr(start, comma - start)));
    start = comma + 1;
  }
  std::vector<bool> cpus(words.size() * 32, false);
  for (size_t cpu = 0; cpu < cpus.size(); ++cpu) cpus[cpu] = (words[cpu / 32] >> (cpu % 32)) & 1u;
  return cpu_list(cpus);
}

// "16.0 GT/s PCIe" and a width of 16 -> GB/s of payload, one direction.
float pcie_gbps(const std::string& speed, const std::string& width) {
  const double gts = std::atof(speed.c_str());
  const int lanes = std::atoi(width.c_str());
  if (gts <= 0 || lanes <= 0) return 0;
  const double encoding = gts < 8 ? 8.0 / 10.0 : 128.0 / 130.0;  // PCIe 1-2: 8b/10b; from 3: 128b/130b
  return static_cast<float>(gts * encoding / 8.0 * lanes);
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  Topology read(xmlNode* system) {
    out_.source = path_;
    Node machine;
    machine.kind = Kind::kMachine;
    const int root = out_.add(machine);
    for (xmlNode* c = system->children; c != nullptr; c = c->next)
      if (named(c, "cpu")) cpu(c, root);
    resolve_nvlinks();
    out_.finish();
    return std::move(out_);
  }

 private:
  void cpu(xmlNode* e, int parent) {
    Node numa;
    numa.kind = Kind::kNuma;
    numa.parent = parent;
    numa.os_index = std::atoi(attr(e, "numaid").c_str());
    numa.cpuset = affinity_to_list(attr(e, "affinity"));
    const int at = out_.add(numa);
    Node host;
    host.kind = Kind::kHostBridge;
    host.parent = at;
    const int bridge = out_.add(host);
    for (xmlNode* c = e->children; c != nullptr; c = c->next) {
      if (named(c, "pci")) pci(c, bridge);
      if (named(c, "nic")) nic_without_pci(c, at);
    }
  }

  void pci(xmlNode* e, int parent) {
    Node n;
    n.parent = parent;
    const std::string busid = attr(e, "busid");
    if (!PciAddress::parse(busid, &n.pci))
      fail(Code::kInvalidArgument, "topology file ", path_, ": <pci busid=\"", busid, "\"> is not a PCI address");
    n.has_pci = true;
    const uint32_t cls = hex(attr(e, "class"));  // 0x030200: class, subclass, interface
    n.pci_class = cls >> 8;
    n.vendor = hex(attr(e, "vendor"));
    n.device_id = hex(attr(e, "device"));
    n.link_gbps = pcie_gbps(attr(e, "link_speed"), attr(e, "link_width"));
    if (!attr(e, "link_gbps").empty()) n.link_gbps = std::strtof(attr(e, "link_gbps").c_str(), nullptr);  // our dumps
    bool has_gpu = false;
    xmlNode* nic = nullptr;
    for (xmlNode* c = e->children; c != nullptr; c = c->next) {
      if (named(c, "gpu")) has_gpu = true;
      if (named(c, "nic")) nic = c;
    }
    const bool efa = n.vendor == 0x1d0f && (n.device_id & 0xfff0) == 0xefa0;
    if (n.pci_class == 0x0604) {
      n.kind = Kind::kBridge;
      const int upstream = out_.add(n);
      for (xmlNode* c = e->children; c != nullptr; c = c->next)
        if (named(c, "pci")) {
          Node port;  // the switch's downstream port towards this child
          port.kind = Kind::kBridge;
          port.parent = upstream;
          pci(c, out_.add(port));
        }
      return;
    }
    if (has_gpu || ((n.pci_class >> 8) == 0x03 && (n.vendor == 0x10de || n.vendor == 0))) {
      n.kind = Kind::kGpu;
    } else if (n.vendor == 0x10de && n.pci_class == 0x0680) {
      n.kind = Kind::kNvSwitch;
    } else if (nic != nullptr || (n.pci_class >> 8) == 0x02) {
      n.kind = Kind::kNic;
      n.rdma = n.pci_class == 0x0207 || efa;
      n.link_layer = efa ? LinkLayer::kEfa : n.pci_class == 0x0207 ? LinkLayer::kInfiniBand : LinkLayer::kEthernet;
      if (nic != nullptr) net_names(nic, &n);
    } else {
      n.kind = Kind::kPciDevice;
    }
    const int index = out_.add(n);
    by_busid_[n.pci] = index;
    for (xmlNode* c = e->children; c != nullptr; c = c->next)
      if (named(c, "gpu"))
        for (xmlNode* l = c->children; l != nullptr; l = l->next)
          if (named(l, "nvlink"))
            links_.push_back({index, attr(l, "target"), std::atoi(attr(l, "count").c_str()), hex(attr(l, "tclass")),
                              std::strtod(attr(l, "gbps").c_str(), nullptr)});
  }

  void net_names(xmlNode* nic, Node* n) {
    for (xmlNode* c = nic->children; c != nullptr; c = c->next)
      if (named(c, "net") && !attr(c, "name").empty()) n->names.push_back(attr(c, "name"));
  }

  void nic_without_pci(xmlNode* e, int parent) {
    Node n;
    n.kind = Kind::kNic;
    n.parent = parent;
    n.link_layer = LinkLayer::kEthernet;
    net_names(e, &n);
    out_.add(n);
  }

  // <nvlink target="busid" count="12" tclass="..."/>: to a GPU, or to an
  // NVSwitch (tclass 0x0680xx), which the file may not list as a <pci>: all
  // such links then go to one implied switch, as NCCL takes them. A link to
  // the GPU itself (Azure NC A100 v4 has one) is not a link. Bandwidth: our
  // dumps' gbps, else 20 GB/s per link (NVLink 3, one direction).
  void resolve_nvlinks() {
    constexpr double kPerLinkGbps = 20;
    int implied_switch = -1;
    for (const auto& l : links_) {
      if (l.count <= 0) continue;
      PciAddress target;
      auto it = PciAddress::parse(l.target, &target) ? by_busid_.find(target) : by_busid_.end();
      int to = it != by_busid_.end() ? it->second : -1;
      if (to < 0 && (l.tclass >> 8) == 0x0680) {
        if (implied_switch < 0) {
          Node nvswitch;
          nvswitch.kind = Kind::kNvSwitch;
          nvswitch.parent = 0;  // the machine
          implied_switch = out_.add(nvswitch);
        }
        to = implied_switch;
      }
      if (to < 0 || to == l.from) continue;
      out_.nvlinks.push_back(NvLink{l.from, to, l.gbps > 0 ? l.gbps : l.count * kPerLinkGbps});
    }
  }

  struct PendingLink {
    int from;
    std::string target;
    int count;
    uint32_t tclass;
    double gbps;  // our dumps say it; 0: unknown
  };
  std::string path_;
  Topology out_;
  std::map<PciAddress, int> by_busid_;
  std::vector<PendingLink> links_;
};

}  // namespace

Topology load_nccl_xml(const std::string& path) {
  std::unique_ptr<xmlDoc, void (*)(xmlDoc*)> doc(
      xmlReadFile(path.c_str(), nullptr, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING), xmlFreeDoc);
  if (doc == nullptr) {
    const xmlError* e = xmlGetLastError();
    fail(Code::kInvalidArgument, "topology file ", path, ": not readable XML",
         e != nullptr && e->message != nullptr ? str_cat(" (line ", e->line, ": ", e->message, ")") : "");
  }
  xmlNode* root = xmlDocGetRootElement(doc.get());
  if (root == nullptr || !named(root, "system"))
    fail(Code::kInvalidArgument, "topology file ", path, ": the root element is not <system> (NCCL topology format)");
  return Reader(path).read(root);
}

}  // namespace coll::topo
