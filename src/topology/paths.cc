#include "topology/paths.h"

#include <algorithm>
#include <limits>

namespace coll::topo {
namespace {

std::vector<int> ancestors(const Topology& t, int node) {  // node first, root last
  std::vector<int> out;
  for (int i = node; i >= 0; i = t.nodes[static_cast<size_t>(i)].parent) out.push_back(i);
  return out;
}

// Bridges strictly between `node` and its ancestor `top`.
int bridges_between(const Topology& t, int node, int top) {
  int n = 0;
  for (int i = t.nodes[static_cast<size_t>(node)].parent; i >= 0 && i != top;
       i = t.nodes[static_cast<size_t>(i)].parent)
    if (t.nodes[static_cast<size_t>(i)].kind == Kind::kBridge) ++n;
  return n;
}

// The slowest known PCIe link from `node` up to (not including) `top`.
double slowest_link(const Topology& t, int node, int top) {
  double slowest = 0;
  for (int i = node; i >= 0 && i != top; i = t.nodes[static_cast<size_t>(i)].parent) {
    double g = t.nodes[static_cast<size_t>(i)].link_gbps;
    if (g > 0 && (slowest == 0 || g < slowest)) slowest = g;
  }
  return slowest;
}

double min_known(double a, double b) { return a == 0 ? b : b == 0 ? a : std::min(a, b); }

// NVLink bandwidth between a and b: a direct link, plus every NVSwitch both
// reach (the narrower of the two links through it).
double nvlink_gbps(const Topology& t, int a, int b) {
  auto link = [&](int x, int y) {
    double g = 0;
    for (const NvLink& l : t.nvlinks)
      if ((l.a == x && l.b == y) || (l.a == y && l.b == x)) g += l.gbps;
    return g;
  };
  double total = link(a, b);
  for (int s = 0; s < static_cast<int>(t.nodes.size()); ++s)
    if (t.nodes[static_cast<size_t>(s)].kind == Kind::kNvSwitch) total += std::min(link(a, s), link(b, s));
  return total;
}

}  // namespace

const char* path_name(PathType type) {
  switch (type) {
    case PathType::kNvl:
      return "NVL";
    case PathType::kPix:
      return "PIX";
    case PathType::kPxb:
      return "PXB";
    case PathType::kPhb:
      return "PHB";
    case PathType::kNode:
      return "NODE";
    case PathType::kSys:
      return "SYS";
  }
  return "?";
}

std::string Path::to_string() const {
  return type == PathType::kSys && same_package ? "SYS(same-pkg)" : path_name(type);
}

Path path_between(const Topology& t, int a, int b, bool nvlink) {
  Path p;
  if (a == b) return {PathType::kPix, false, 0};
  const Kind ka = t.nodes[static_cast<size_t>(a)].kind, kb = t.nodes[static_cast<size_t>(b)].kind;
  if (nvlink && ka == Kind::kGpu && kb == Kind::kGpu) {
    double g = nvlink_gbps(t, a, b);
    if (g > 0) return {PathType::kNvl, false, g};
  }
  std::vector<int> up_a = ancestors(t, a), up_b = ancestors(t, b);
  int common = -1;
  for (int x : up_a)
    if (std::find(up_b.begin(), up_b.end(), x) != up_b.end()) {
      common = x;
      break;
    }
  p.gbps = min_known(slowest_link(t, a, common), slowest_link(t, b, common));
  const Kind kc = common >= 0 ? t.nodes[static_cast<size_t>(common)].kind : Kind::kMachine;
  if (kc == Kind::kBridge) {
    p.type = bridges_between(t, a, common) <= 1 && bridges_between(t, b, common) <= 1 ? PathType::kPix : PathType::kPxb;
    return p;
  }
  if (kc == Kind::kHostBridge) {
    p.type = PathType::kPhb;
    return p;
  }
  const int na = t.numa_of(a), nb = t.numa_of(b);
  if (na == nb) {  // one NUMA node (or neither is under one, in the same place)
    p.type = PathType::kNode;
    return p;
  }
  p.type = PathType::kSys;
  const int pa = t.package_of(a), pb = t.package_of(b);
  p.same_package = pa >= 0 && pa == pb;
  p.gbps = 0;  // the inter-socket link is not described
  return p;
}

std::vector<int> nic_for_each_gpu(const Topology& t) {
  std::vector<int> candidates;
  for (size_t i = 0; i < t.nics.size(); ++i)
    if (t.nodes[static_cast<size_t>(t.nics[i])].rdma) candidates.push_back(static_cast<int>(i));
  if (candidates.empty())
    for (size_t i = 0; i < t.nics.size(); ++i) candidates.push_back(static_cast<int>(i));
  std::vector<int> out, load(t.nics.size(), 0);
  if (candidates.empty()) return out;
  auto rank = [&](int gpu, int nic) {  // smaller is better
    Path p = path_between(t, gpu, t.nics[static_cast<size_t>(nic)]);
    int cls = static_cast<int>(p.type) * 2 + (p.type == PathType::kSys && !p.same_package ? 1 : 0);
    return std::make_pair(cls, load[static_cast<size_t>(nic)]);
  };
  for (int gpu : t.gpus) {
    int best = candidates[0];
    for (int nic : candidates)
      if (rank(gpu, nic) < rank(gpu, best)) best = nic;
    ++load[static_cast<size_t>(best)];
    out.push_back(best);
  }
  return out;
}

std::vector<int> gpu_ring(const Topology& t) {
  const int n = static_cast<int>(t.gpus.size());
  std::vector<int> ring;
  if (n == 0) return ring;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  int at = 0;
  ring.push_back(0);
  seen[0] = true;
  for (int k = 1; k < n; ++k) {
    int best = -1;
    std::pair<int, double> best_key{std::numeric_limits<int>::max(), 0};
    for (int j = 0; j < n; ++j) {
      if (seen[static_cast<size_t>(j)]) continue;
      Path p = path_between(t, t.gpus[static_cast<size_t>(at)], t.gpus[static_cast<size_t>(j)]);
      std::pair<int, double> key{static_cast<int>(p.type) * 2 + (p.type == PathType::kSys && !p.same_package), -p.gbps};
      if (best < 0 || key < best_key) best = j, best_key = key;
    }
    ring.push_back(best);
    seen[static_cast<size_t>(best)] = true;
    at = best;
  }
  return ring;
}

}  // namespace coll::topo
