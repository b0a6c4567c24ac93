// colltopo — what coll sees of this node, or of a topology file.
//
//   colltopo [--input FILE] [--json] [--ranks-per-node N]
//
// Prints the NUMA nodes, cores, GPUs (CUDA's PCI_BUS_ID order, with PCI id
// and NUMA node), NICs (PCI id, link layer, NUMA node), the GPU-GPU and
// GPU-NIC path matrices (NVL, PIX, PXB, PHB, NODE, SYS), the NIC each GPU
// uses, and the ring and trees coll runs for N ranks on the node (and the
// GPU ring along NVLink that GPU transports will use). --json prints one
// object with the keys gpus, nics, numa, paths, gpu_nic, rings, trees and
// gpu_ring. FILE is an hwloc XML export or an NCCL topology file;
// without it, hwloc reads this machine (COLL_TOPO_FILE is honoured too).
#include "algorithms/partition.h"
#include "base/error.h"
#include "topology/load.h"
#include "topology/paths.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using coll::topo::Kind;
using coll::topo::Node;
using coll::topo::Topology;

struct Options {
  std::string input;
  bool json = false;
  int ranks_per_node = -1;  // default: one per GPU, else one per NUMA node
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: colltopo [--input FILE] [--json] [--ranks-per-node N]\n"
               "  --input FILE          an hwloc XML export or an NCCL topology file (default: this machine)\n"
               "  --json                one JSON object: gpus, nics, numa, paths, gpu_nic, rings, trees, gpu_ring\n"
               "  --ranks-per-node N    ranks for the ring and tree (default: GPUs, else NUMA nodes)\n");
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

const Node& node(const Topology& t, int i) { return t.nodes[static_cast<size_t>(i)]; }

int numa_id(const Topology& t, int i) {
  int n = t.numa_of(i);
  return n < 0 ? -1 : node(t, n).os_index;
}

std::string ids(const Node& n) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%04x", n.vendor, n.device_id);
  return text;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ',';
    out += n;
  }
  return out;
}

// What coll runs inside one node of `ranks` ranks: the ring visits the
// local ranks in order (local rank i uses GPU i), and the allreduce's two
// trees are the double binary tree over them (as each rank's parent, -1 at
// a root). Across nodes, rings visit node by node and the trees join the
// nodes with these chains inside (see the README's Topology section).
struct InNode {
  std::vector<int> ring;
  std::vector<int> parents[2];
  std::vector<int> gpu_ring;  // following NVLink, then PCIe: for the GPU transports to come
};

InNode in_node(const Topology& t, int ranks) {
  InNode out;
  for (int r = 0; r < ranks; ++r) out.ring.push_back(r);
  for (int which = 0; which < 2; ++which)
    for (int r = 0; r < ranks; ++r) out.parents[which].push_back(coll::algo::double_tree(ranks, r, which).parent);
  out.gpu_ring = coll::topo::gpu_ring(t);
  return out;
}

std::string ints(const std::vector<int>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + std::to_string(v[i]);
  return out;
}

void print_text(const Topology& t, const std::vector<int>& nic_of, const InNode& here) {
  std::printf("topology: %s\n", t.source.c_str());
  std::printf("%zu package(s), %zu NUMA node(s), %d cores, %d PUs", t.packages.size(), t.numas.size(), t.cores, t.pus);
  if (t.l2_bytes_per_core > 0) std::printf(", L2 %zu KiB a core (the least)", t.l2_bytes_per_core >> 10);
  std::printf("\n");
  for (int n : t.numas) std::printf("  NUMA %d: cpus %s\n", node(t, n).os_index, node(t, n).cpuset.c_str());
  std::printf("%zu GPU(s) (CUDA order, PCI_BUS_ID):\n", t.gpus.size());
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    const Node& n = node(t, t.gpus[g]);
    std::printf("  GPU%zu %s %s NUMA %d%s%s\n", g, n.pci.to_string().c_str(), ids(n).c_str(), numa_id(t, t.gpus[g]),
                n.names.empty() ? "" : " ", joined(n.names).c_str());
  }
  std::printf("%zu NIC(s):\n", t.nics.size());
  for (size_t k = 0; k < t.nics.size(); ++k) {
    const Node& n = node(t, t.nics[k]);
    std::printf("  NIC%zu %s %s %s%s NUMA %d %s\n", k, n.has_pci ? n.pci.to_string().c_str() : "(no PCI)",
                n.has_pci ? ids(n).c_str() : "", coll::topo::link_layer_name(n.link_layer), n.rdma ? " rdma" : "",
                numa_id(t, t.nics[k]), joined(n.names).c_str());
  }
  if (!t.gpus.empty()) {
    std::printf("GPU-GPU paths:\n      ");
    for (size_t j = 0; j < t.gpus.size(); ++j) std::printf(" %-13s", ("GPU" + std::to_string(j)).c_str());
    std::printf("\n");
    for (size_t i = 0; i < t.gpus.size(); ++i) {
      std::printf("  GPU%-3zu", i);
      for (size_t j = 0; j < t.gpus.size(); ++j)
        std::printf(" %-13s", i == j ? "-" : coll::topo::path_between(t, t.gpus[i], t.gpus[j]).to_string().c_str());
      std::printf("\n");
    }
  }
  if (!t.gpus.empty() && !t.nics.empty()) {
    std::printf("GPU-NIC paths:\n      ");
    for (size_t k = 0; k < t.nics.size(); ++k) std::printf(" %-13s", ("NIC" + std::to_string(k)).c_str());
    std::printf("\n");
    for (size_t i = 0; i < t.gpus.size(); ++i) {
      std::printf("  GPU%-3zu", i);
      for (int nic : t.nics) std::printf(" %-13s", coll::topo::path_between(t, t.gpus[i], nic).to_string().c_str());
      std::printf("  -> NIC%d\n", nic_of[i]);
    }
  }
  std::printf("ring of %zu local ranks (local rank i uses GPU i): %s\n", here.ring.size(),
              ints(here.ring, " ").c_str());
  for (int which = 0; which < 2; ++which)
    std::printf("allreduce tree %d, each local rank's parent (-1: root): %s\n", which,
                ints(here.parents[which], " ").c_str());
  if (!here.gpu_ring.empty())
    std::printf("GPU ring along NVLink, then PCIe (for the GPU transports to come): %s\n",
                ints(here.gpu_ring, " ").c_str());
}

void print_json(const Topology& t, const std::vector<int>& nic_of, const InNode& here) {
  std::printf("{\"source\": %s, \"packages\": %zu, \"cores\": %d, \"pus\": %d,\n", quoted(t.source).c_str(),
              t.packages.size(), t.cores, t.pus);
  std::printf(" \"numa\": [");
  for (size_t i = 0; i < t.numas.size(); ++i)
    std::printf("%s{\"id\": %d, \"cpus\": %s}", i ? ", " : "", node(t, t.numas[i]).os_index,
                quoted(node(t, t.numas[i]).cpuset).c_str());
  std::printf("],\n \"gpus\": [");
  for (size_t g = 0; g < t.gpus.size(); ++g) {
    const Node& n = node(t, t.gpus[g]);
    std::printf("%s{\"index\": %zu, \"pci\": %s, \"id\": %s, \"numa\": %d}", g ? ", " : "", g,
                quoted(n.pci.to_string()).c_str(), quoted(ids(n)).c_str(), numa_id(t, t.gpus[g]));
  }
  std::printf("],\n \"nics\": [");
  for (size_t k = 0; k < t.nics.size(); ++k) {
    const Node& n = node(t, t.nics[k]);
    std::printf("%s{\"index\": %zu, \"pci\": %s, \"names\": [", k ? ", " : "", k,
                n.has_pci ? quoted(n.pci.to_string()).c_str() : "null");
    for (size_t i = 0; i < n.names.size(); ++i) std::printf("%s%s", i ? ", " : "", quoted(n.names[i]).c_str());
    std::printf("], \"link_layer\": %s, \"rdma\": %s, \"numa\": %d}",
                quoted(coll::topo::link_layer_name(n.link_layer)).c_str(), n.rdma ? "true" : "false",
                numa_id(t, t.nics[k]));
  }
  std::printf("],\n \"paths\": {\"gpu_gpu\": [");
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    std::printf("%s[", i ? ", " : "");
    for (size_t j = 0; j < t.gpus.size(); ++j)
      std::printf("%s%s", j ? ", " : "",
                  quoted(i == j ? "-" : coll::topo::path_between(t, t.gpus[i], t.gpus[j]).to_string()).c_str());
    std::printf("]");
  }
  std::printf("], \"gpu_nic\": [");
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    std::printf("%s[", i ? ", " : "");
    for (size_t k = 0; k < t.nics.size(); ++k)
      std::printf("%s%s", k ? ", " : "", quoted(coll::topo::path_between(t, t.gpus[i], t.nics[k]).to_string()).c_str());
    std::printf("]");
  }
  std::printf("]},\n \"gpu_nic\": [");
  for (size_t i = 0; i < nic_of.size(); ++i) std::printf("%s%d", i ? ", " : "", nic_of[i]);
  std::printf("],\n \"rings\": [[%s]],\n", ints(here.ring, ", ").c_str());
  std::printf(" \"trees\": [{\"parents\": [%s]}, {\"parents\": [%s]}],\n", ints(here.parents[0], ", ").c_str(),
              ints(here.parents[1], ", ").c_str());
  std::printf(" \"gpu_ring\": [%s]}\n", ints(here.gpu_ring, ", ").c_str());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--json") {
      o.json = true;
    } else if ((a == "--input" || a == "-i") && i + 1 < argc) {
      o.input = argv[++i];
    } else if (a == "--ranks-per-node" && i + 1 < argc) {
      o.ranks_per_node = std::atoi(argv[++i]);
      if (o.ranks_per_node <= 0) {
        std::fprintf(stderr, "colltopo: --ranks-per-node %s: must be a positive number\n", argv[i]);
        return 2;
      }
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "colltopo: unknown argument '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  try {
    Topology t = o.input.empty() ? coll::topo::load_configured() : coll::topo::load_file(o.input);
    const int ranks = o.ranks_per_node > 0 ? o.ranks_per_node
                      : !t.gpus.empty()    ? static_cast<int>(t.gpus.size())
                                           : std::max<int>(1, static_cast<int>(t.numas.size()));
    const std::vector<int> nic_of = coll::topo::nic_for_each_gpu(t);
    const InNode here = in_node(t, ranks);
    if (o.json)
      print_json(t, nic_of, here);
    else
      print_text(t, nic_of, here);
  } catch (const coll::Error& e) {
    std::fprintf(stderr, "colltopo: %s\n", e.what());
    return 1;
  }
  return 0;
}
