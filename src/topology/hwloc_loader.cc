// Topology from hwloc: the live machine or an hwloc XML export. hwloc's
// tree maps onto ours almost one to one; what needs care:
// - I/O objects are dropped by hwloc's default filter, even from XML, so the
//   filter keeps them all.
// - NUMA nodes are memory children in hwloc 2. A device belongs to the NUMA
//   node of its non-I/O parent when that parent covers exactly one (AMD
//   NPS4 hangs each one under a Group).
// - GPUs are told by PCI vendor and class, not by OS devices: most captures
//   have none for the GPUs, and BMC VGA chips do have DRM ones.
#include "base/error.h"
#include "topology/load.h"

#include <hwloc.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace coll::topo {
namespace {

struct HwlocTopology {
  hwloc_topology_t t = nullptr;
  ~HwlocTopology() {
    if (t != nullptr) hwloc_topology_destroy(t);
  }
};

std::string list_of(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  hwloc_bitmap_list_asprintf(&text, set);
  std::string out = text != nullptr ? text : "";
  free(text);
  return out;
}

class Builder {
 public:
  explicit Builder(hwloc_topology_t t) : t_(t) {}

  Topology build(const std::string& source) {
    out_.source = source;
    out_.cores = hwloc_get_nbobjs_by_type(t_, HWLOC_OBJ_CORE);
    out_.pus = hwloc_get_nbobjs_by_type(t_, HWLOC_OBJ_PU);
    out_.l2_bytes_per_core = l2_bytes_per_core();
    Node machine;
    machine.kind = Kind::kMachine;
    hwloc_obj_t root = hwloc_get_root_obj(t_);
    machine.cpuset = list_of(root->cpuset);
    walk(root, out_.add(machine));
    add_nvlinks();
    out_.finish();
    return std::move(out_);
  }

 private:
  size_t l2_bytes_per_core() const {
    size_t least = 0;
    for (hwloc_obj_t c = nullptr; (c = hwloc_get_next_obj_by_type(t_, HWLOC_OBJ_L2CACHE, c)) != nullptr;) {
      const int cores = std::max(hwloc_get_nbobjs_inside_cpuset_by_type(t_, c->cpuset, HWLOC_OBJ_CORE), 1);
      const size_t share = static_cast<size_t>(c->attr->cache.size) / static_cast<size_t>(cores);
      if (share > 0 && (least == 0 || share < least)) least = share;
    }
    return least;
  }

  // `at`: our node for the nearest container above obj's children.
  void walk(hwloc_obj_t obj, int at) {
    for (hwloc_obj_t m = obj->memory_first_child; m != nullptr; m = m->next_sibling)
      if (m->type == HWLOC_OBJ_NUMANODE) {
        Node numa;
        numa.kind = Kind::kNuma;
        numa.parent = at;
        numa.os_index = static_cast<int>(m->os_index);
        numa.cpuset = list_of(m->cpuset);
        numa_of_[m->os_index] = out_.add(numa);
      }
    for (hwloc_obj_t c = obj->first_child; c != nullptr; c = c->next_sibling) {
      int below = at;
      if (c->type == HWLOC_OBJ_PACKAGE) {
        Node package;
        package.kind = Kind::kPackage;
        package.parent = at;
        package.os_index = static_cast<int>(c->os_index);
        package.cpuset = list_of(c->cpuset);
        below = out_.add(package);
      }
      walk(c, below);
    }
    // I/O hangs under the NUMA node when obj covers exactly one.
    int io_parent = at;
    if (obj->nodeset != nullptr && hwloc_bitmap_weight(obj->nodeset) == 1) {
      auto it = numa_of_.find(static_cast<unsigned>(hwloc_bitmap_first(obj->nodeset)));
      if (it != numa_of_.end()) io_parent = it->second;
    }
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) io(c, io_parent);
  }

  void io(hwloc_obj_t obj, int parent) {
    if (obj->type == HWLOC_OBJ_OS_DEVICE) return;  // read by their PCI parent
    Node n;
    n.parent = parent;
    if (obj->type == HWLOC_OBJ_BRIDGE) {
      n.kind = obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? Kind::kHostBridge : Kind::kBridge;
      if (obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) pci(obj->attr->bridge.upstream.pci, &n);
    } else if (obj->type == HWLOC_OBJ_PCI_DEVICE) {
      pci(obj->attr->pcidev, &n);
      classify(obj, &n);
    } else {
      return;
    }
    const int index = out_.add(n);
    index_of_[obj] = index;
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) io(c, index);
  }

  static void pci(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& a, Node* n) {
    n->has_pci = true;
    n->pci = PciAddress{a.domain, a.bus, a.dev, a.func};
    n->vendor = a.vendor_id;
    n->device_id = a.device_id;
    n->pci_class = a.class_id;
    n->link_gbps = a.linkspeed;
  }

  static void classify(hwloc_obj_t obj, Node* n) {
    std::vector<std::string> rdma_names, other_names;
    bool openfabrics = false;
    for (hwloc_obj_t c = obj->io_first_child; c != nullptr; c = c->next_sibling) {
      if (c->type != HWLOC_OBJ_OS_DEVICE || c->name == nullptr) continue;
      if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
        openfabrics = true;
        rdma_names.push_back(c->name);
      } else {
        other_names.push_back(c->name);
      }
    }
    n->names = rdma_names;
    n->names.insert(n->names.end(), other_names.begin(), other_names.end());
    const bool nvidia = n->vendor == 0x10de;
    const bool efa = n->vendor == 0x1d0f && (n->device_id & 0xfff0) == 0xefa0;
    if (obj->subtype != nullptr && std::string(obj->subtype) == "NVSwitch") {
      n->kind = Kind::kNvSwitch;
    } else if (nvidia && n->pci_class == 0x0680) {
      n->kind = Kind::kNvSwitch;
    } else if (nvidia && (n->pci_class >> 8) == 0x03) {
      n->kind = Kind::kGpu;
    } else if (openfabrics || n->pci_class == 0x0207 || efa) {
      n->kind = Kind::kNic;
      n->rdma = true;
      n->link_layer = efa ? LinkLayer::kEfa : n->pci_class == 0x0207 ? LinkLayer::kInfiniBand : LinkLayer::kEthernet;
    } else if ((n->pci_class >> 8) == 0x02) {
      n->kind = Kind::kNic;
      n->link_layer = LinkLayer::kEthernet;
    } else {
      n->kind = Kind::kPciDevice;
    }
  }

  // hwloc's "NVLinkBandwidth" matrix (MB/s), between GPUs, NVSwitches and
  // CPU packages; the diagonal is not a link.
  void add_nvlinks() {
    unsigned nr = 1;
    hwloc_distances_s* d = nullptr;
    if (hwloc_distances_get_by_name(t_, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0) return;
    for (unsigned i = 0; i < d->nbobjs; ++i)
      for (unsigned j = i + 1; j < d->nbobjs; ++j) {
        double mbps = static_cast<double>(std::max(d->values[i * d->nbobjs + j], d->values[j * d->nbobjs + i]));
        int a = node_of(d->objs[i]), b = node_of(d->objs[j]);
        if (mbps > 0 && a >= 0 && b >= 0) out_.nvlinks.push_back(NvLink{a, b, mbps / 1000.0});
      }
    hwloc_distances_release(t_, d);
  }

  // The matrix names GPUs by their OS devices (nvml0) and switches by their
  // PCI devices: either way, the PCI device's node.
  int node_of(hwloc_obj_t obj) {
    if (obj->type == HWLOC_OBJ_OS_DEVICE && obj->parent != nullptr) obj = obj->parent;
    auto it = index_of_.find(obj);
    if (it != index_of_.end()) return it->second;
    if (obj->type == HWLOC_OBJ_PACKAGE)  // CPU-GPU NVLink (POWER8/9)
      for (size_t i = 0; i < out_.nodes.size(); ++i)
        if (out_.nodes[i].kind == Kind::kPackage && out_.nodes[i].os_index == static_cast<int>(obj->os_index))
          return static_cast<int>(i);
    return -1;
  }

  hwloc_topology_t t_;
  Topology out_;
  std::map<unsigned, int> numa_of_;  // OS index -> our node
  std::map<hwloc_obj_t, int> index_of_;
};

Topology load(const char* xml_path) {
  HwlocTopology h;
  const std::string what = xml_path != nullptr ? str_cat("topology file ", xml_path) : "hwloc on this machine";
  if (hwloc_topology_init(&h.t) != 0) fail_errno(Code::kSystem, errno, what, "hwloc_topology_init");
  if (xml_path != nullptr && hwloc_topology_set_xml(h.t, xml_path) != 0)
    fail(Code::kInvalidArgument, what, ": hwloc cannot read it (", std::strerror(errno), ")");
  hwloc_topology_set_io_types_filter(h.t, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(h.t) != 0)
    fail(Code::kInvalidArgument, what, ": hwloc ", HWLOC_VERSION, " could not load it (", std::strerror(errno),
         "; an XML export newer than this hwloc understands, e.g. format 3.0 under hwloc 2.x, is refused)");
  return Builder(h.t).build(xml_path != nullptr ? xml_path : "hwloc (this machine)");
}

}  // namespace

Topology load_live() { return load(nullptr); }
Topology load_hwloc_xml(const std::string& path) { return load(path.c_str()); }

}  // namespace coll::topo
