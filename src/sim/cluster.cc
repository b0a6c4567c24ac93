#include "sim/cluster.h"

#include "base/error.h"
#include "sim/tuning.h"
#include "topology/load.h"
#include "topology/paths.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace coll::sim {
namespace {

using Json = nlohmann::json;

struct Reader {
  const std::string& origin;

  const Json& field(const Json& j, const char* name, const char* where) const {
    if (!j.is_object() || !j.contains(name))
      fail(Code::kInvalidArgument, origin, ": ", where, " has no \"", name, "\"");
    return j.at(name);
  }
  double number(const Json& j, const char* name, const char* where, double min_value) const {
    const Json& v = field(j, name, where);
    if (!v.is_number() || v.get<double>() < min_value)
      fail(Code::kInvalidArgument, origin, ": ", where, ".", name, " is ", v.dump(), "; a number of at least ",
           min_value, " is expected");
    return v.get<double>();
  }
  double number_or(const Json& j, const char* name, const char* where, double min_value, double fallback) const {
    return j.is_object() && j.contains(name) ? number(j, name, where, min_value) : fallback;
  }
  int integer(const Json& j, const char* name, const char* where, int min_value) const {
    const Json& v = field(j, name, where);
    if (!v.is_number_integer() || v.get<long long>() < min_value || v.get<long long>() > (1 << 30))
      fail(Code::kInvalidArgument, origin, ": ", where, ".", name, " is ", v.dump(), "; an integer of at least ",
           min_value, " is expected");
    return v.get<int>();
  }
};

constexpr double kGbit = 1e9 / 8;  // bytes per second in a Gbit/s

// One level of switch groups: what each group holds, and its links up.
struct Level {
  int members = 0;  // NIC ports per leaf (level 0), groups of the level below (above it)
  double oversubscription = 1;
  double uplink_bytes_per_s = 0;  // set: the group's links up have this capacity (islands)
};

std::string read_file(const std::string& path, const char* what) {
  std::ifstream file(path);
  if (!file) fail(Code::kInvalidArgument, what, " ", path, " cannot be read");
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

}  // namespace

Cluster parse_cluster(const std::string& text, const std::string& origin, int ranks, const Tuning* tuning) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    fail(Code::kInvalidArgument, origin, ": not JSON: ", e.what());
  }
  const Reader in{origin};
  Cluster c;
  c.name = j.is_object() && j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : origin;
  c.nodes = in.integer(j, "nodes", "the cluster", 1);
  const Json& node = in.field(j, "node", "the cluster");
  std::vector<int> nic_of_gpu;  // empty: GPUs share the NICs evenly, in order
  if (node.is_object() && node.contains("topology")) {
    // A machine capture: its GPUs, its NICs, the NIC each GPU uses (coll's own pairing), its NVLink speed.
    const Json& file = node["topology"];
    if (!file.is_string()) fail(Code::kInvalidArgument, origin, ": node.topology must be a file name");
    // A relative name is found next to the cluster file first.
    std::string path = file.get<std::string>();
    const size_t slash = origin.rfind('/');
    if (!path.empty() && path[0] != '/' && slash != std::string::npos &&
        std::ifstream(origin.substr(0, slash + 1) + path).good())
      path = origin.substr(0, slash + 1) + path;
    const topo::Topology t = topo::load_file(path);
    if (t.gpus.empty() || t.nics.empty())
      fail(Code::kInvalidArgument, origin, ": node.topology ", file.get<std::string>(), " has ", t.gpus.size(),
           " GPUs and ", t.nics.size(), " NICs; a node of the cluster needs both");
    c.gpus_per_node = static_cast<int>(t.gpus.size());
    c.nics_per_node = static_cast<int>(t.nics.size());
    nic_of_gpu = topo::nic_for_each_gpu(t);
    double nvlink = 0;  // GB/s, the fastest GPU's NVLinks together, each pair once (files list both ends)
    for (int g : t.gpus) {
      std::map<int, double> to;
      for (const topo::NvLink& l : t.nvlinks)
        if (l.a == g || l.b == g) to[l.a == g ? l.b : l.a] = std::max(to[l.a == g ? l.b : l.a], l.gbps);
      double sum = 0;
      for (const auto& [peer, gbps] : to) sum += gbps;
      nvlink = std::max(nvlink, sum);
    }
    c.gpu_link_bytes_per_s = in.number_or(node, "gpu_link_gbps", "node", 1e-9, nvlink * 8) * kGbit;
    if (c.gpu_link_bytes_per_s <= 0)
      fail(Code::kInvalidArgument, origin, ": node.topology has no NVLink: give node.gpu_link_gbps");
  } else {
    c.gpus_per_node = in.integer(node, "gpus", "node", 1);
    c.nics_per_node = in.integer(node, "nics", "node", 1);
    c.gpu_link_bytes_per_s = in.number(node, "gpu_link_gbps", "node", 1e-9) * kGbit;
  }
  c.memory_bytes_per_s = in.number_or(node, "memory_gbps", "node", 0, 0) * kGbit;
  if (node.contains("cores")) c.cores = in.integer(node, "cores", "node", 1);
  if (j.contains("classes")) {
    const Json& classes = j["classes"];
    if (!classes.is_object())
      fail(Code::kInvalidArgument, origin, ": classes must be {\"node\": ..., \"network\": ...}");
    for (const auto& [key, value] : classes.items()) {
      std::string* field = key == "node" ? &c.node_class : key == "network" ? &c.network_class : nullptr;
      if (field == nullptr)
        fail(Code::kInvalidArgument, origin, ": classes.", key, " is not a class of the cluster (node, network)");
      if (!value.is_string())
        fail(Code::kInvalidArgument, origin, ": classes.", key, " must be a link class's name (shm, tcp, ib)");
      *field = value.get<std::string>();
    }
    if (c.node_class == c.network_class)
      fail(Code::kInvalidArgument, origin, ": classes.node and classes.network are both '", c.node_class, "'");
  }
  c.nic_bytes_per_s = in.number(j, "nic_gbps", "the cluster", 1e-9) * kGbit;
  const Json lat = j.contains("latency_us") ? j["latency_us"] : Json::object();
  double gpu_latency = in.number_or(lat, "gpu_link", "latency_us", 0, 0.5) * 1e-6;
  double hop_latency = in.number_or(lat, "hop", "latency_us", 0, 1.0) * 1e-6;  // a NIC's; a tuning file may set it
  const double level_latency = hop_latency;                                    // a switch level's links, each way
  const Json costs = j.contains("costs") ? j["costs"] : Json::object();
  c.costs.alpha_s = in.number_or(costs, "alpha_us", "costs", 0, 2.0) * 1e-6;
  c.costs.gamma_s_per_byte = in.number_or(costs, "gamma_ns_per_byte", "costs", 0, 0.001) * 1e-9;
  c.costs.copy_s_per_byte = in.number_or(costs, "copy_ns_per_byte", "costs", 0, 0.0005) * 1e-9;
  c.chunk_bytes = static_cast<size_t>(in.number_or(j, "chunk_bytes", "the cluster", 1, 512 << 10));
  const Json& net = in.field(j, "network", "the cluster");
  const bool rails = net.contains("rail_optimized") && net["rail_optimized"].is_boolean() && net["rail_optimized"];
  std::vector<Level> levels;
  const Json& lv = in.field(net, "levels", "network");
  if (!lv.is_array() || lv.empty())
    fail(Code::kInvalidArgument, origin, ": network.levels must be a list of switch levels, leaves first");
  for (size_t l = 0; l < lv.size(); ++l) {
    const std::string where = "network.levels[" + std::to_string(l) + "]";
    Level level;
    level.members = in.integer(lv[l], l == 0 ? "ports" : "groups", where.c_str(), 1);
    level.oversubscription = in.number_or(lv[l], "oversubscription", where.c_str(), 1, 1);
    level.uplink_bytes_per_s = in.number_or(lv[l], "uplink_gbps", where.c_str(), 1e-9, 0) * kGbit;
    levels.push_back(level);
  }
  const int total = c.nodes * c.gpus_per_node;
  if (tuning != nullptr)
    apply_tuning(c, *tuning, gpu_latency, hop_latency, (ranks == 0 ? total : ranks) <= c.gpus_per_node);
  if (ranks < 0 || ranks > total)
    fail(Code::kInvalidArgument, origin, ": ", ranks, " ranks asked for; the cluster has ", total, " GPUs");
  const int nranks = ranks == 0 ? total : ranks;

  // The switch groups each NIC port is in, level by level.
  Fabric& f = c.fabric;
  const int nics = c.nics_per_node;
  // Every node's, not only the used ones': a switch's uplinks are there for all its ports.
  std::vector<std::vector<int>> group_of(static_cast<size_t>(c.nodes) * static_cast<size_t>(nics));
  std::vector<int> groups_at(levels.size(), 0);
  for (int n = 0; n < c.nodes; ++n)
    for (int i = 0; i < nics; ++i) {
      // Rail-optimised: the leaves of a block of nodes are one per rail.
      int g = rails ? (n / levels[0].members) * nics + i : (n * nics + i) / levels[0].members;
      auto& groups = group_of[static_cast<size_t>(n * nics + i)];
      for (size_t l = 0; l < levels.size(); ++l) {
        if (l > 0) g /= levels[l].members;
        groups.push_back(g);
        groups_at[l] = std::max(groups_at[l], g + 1);
      }
    }
  // Each group's capacity down is what its members bring; up, that over its oversubscription.
  std::vector<std::vector<double>> down(levels.size()), up(levels.size());
  std::vector<std::vector<int>> up_link(levels.size()), down_link(levels.size());
  for (size_t l = 0; l < levels.size(); ++l) down[l].assign(static_cast<size_t>(groups_at[l]), 0);
  for (const auto& groups : group_of) down[0][static_cast<size_t>(groups[0])] += c.nic_bytes_per_s;
  const char* names[] = {"leaf", "pod", "plane", "level3", "level4"};
  for (size_t l = 0; l < levels.size(); ++l) {
    up[l].resize(down[l].size());
    for (size_t g = 0; g < down[l].size(); ++g) {
      up[l][g] =
          levels[l].uplink_bytes_per_s > 0 ? levels[l].uplink_bytes_per_s : down[l][g] / levels[l].oversubscription;
      const std::string level = l < 5 ? names[l] : "level" + std::to_string(l);
      const std::string name = level + std::to_string(g);
      // Uplinks are cables of the NICs' speed, at least one.
      const int cables = std::max(1, static_cast<int>(std::lround(up[l][g] / c.nic_bytes_per_s)));
      // A rail's leaves carry that rail's traffic only: a kind of their own.
      const std::string kind = l == 0 && rails ? level + ".rail" + std::to_string(g % nics) : level;
      up_link[l].push_back(f.add_link(name + ".up", up[l][g], level_latency, cables, kind + ".up"));
      down_link[l].push_back(f.add_link(name + ".down", up[l][g], level_latency, cables, kind + ".down"));
    }
    if (l + 1 < levels.size()) {
      std::vector<bool> counted(down[l].size(), false);
      for (const auto& groups : group_of)
        if (!counted[static_cast<size_t>(groups[l])]) {
          counted[static_cast<size_t>(groups[l])] = true;
          down[l + 1][static_cast<size_t>(groups[l + 1])] += up[l][static_cast<size_t>(groups[l])];
        }
    }
  }
  c.uplinks = up_link;
  c.downlinks = down_link;
  // Every node's NICs, so that failed_links may name any (the unused ones carry nothing).
  std::vector<int> nic_up, nic_down;
  for (int n = 0; n < c.nodes; ++n)
    for (int i = 0; i < nics; ++i) {
      const std::string nic = "nic" + std::to_string(i);
      const std::string name = "node" + std::to_string(n) + "." + nic;
      nic_up.push_back(f.add_link(name + ".up", c.nic_bytes_per_s, hop_latency, 1, nic + ".up"));
      nic_down.push_back(f.add_link(name + ".down", c.nic_bytes_per_s, hop_latency, 1, nic + ".down"));
    }
  if (c.cores > 0 && c.memory_bytes_per_s <= 0)
    fail(Code::kInvalidArgument, origin, ": node.cores is for nodes of CPU ranks (node.memory_gbps)");
  std::vector<int> memory(static_cast<size_t>(c.nodes), -1);
  std::vector<int> core_link;  // a node's, by core, while its ranks are placed
  for (int r = 0; r < nranks; ++r) {
    const int n = r / c.gpus_per_node, g = r % c.gpus_per_node;
    const int nic = nic_of_gpu.empty() ? g * nics / c.gpus_per_node : nic_of_gpu[static_cast<size_t>(g)];
    const int port = n * nics + nic;
    Fabric::Place place;
    place.node = n;
    const std::string gpu = "gpu" + std::to_string(g);
    const std::string name = "node" + std::to_string(n) + "." + gpu;
    if (c.memory_bytes_per_s > 0 && c.cores > 0 && c.cores < c.gpus_per_node) {
      // Ranks that outnumber the cores share them: a core copies for each of its ranks.
      if (g == 0) core_link.assign(static_cast<size_t>(c.cores), -1);
      int& core = core_link[static_cast<size_t>(g % c.cores)];
      const std::string id = "core" + std::to_string(g % c.cores);
      if (core < 0)
        core = f.add_link("node" + std::to_string(n) + "." + id, c.gpu_link_bytes_per_s, gpu_latency, 0, id);
      place.gpu_up = place.gpu_down = core;
    } else if (c.memory_bytes_per_s > 0) {
      // A CPU rank's core (one each: no cores given, or as many as ranks) copies its messages
      // in and out and does its local work: one link for all.
      place.gpu_up = place.gpu_down = f.add_link(name + ".core", c.gpu_link_bytes_per_s, gpu_latency, 0, gpu + ".core");
    } else {
      place.gpu_up = f.add_link(name + ".up", c.gpu_link_bytes_per_s, gpu_latency, 0, gpu + ".up");
      place.gpu_down = f.add_link(name + ".down", c.gpu_link_bytes_per_s, gpu_latency, 0, gpu + ".down");
    }
    int& mem = memory[static_cast<size_t>(n)];
    if (mem < 0 && c.memory_bytes_per_s > 0)
      mem = f.add_link("node" + std::to_string(n) + ".memory", c.memory_bytes_per_s, 0, 0, "memory");
    place.memory = mem;
    place.nic_up = nic_up[static_cast<size_t>(port)];
    place.nic_down = nic_down[static_cast<size_t>(port)];
    for (size_t l = 0; l < levels.size(); ++l) {
      const int grp = group_of[static_cast<size_t>(port)][l];
      place.group.push_back(grp);
      place.group_up.push_back(up_link[l][static_cast<size_t>(grp)]);
      place.group_down.push_back(down_link[l][static_cast<size_t>(grp)]);
    }
    f.add_rank(std::move(place));
  }
  if (j.contains("failed_links")) {
    const Json& failed = j["failed_links"];
    if (!failed.is_array()) fail(Code::kInvalidArgument, origin, ": failed_links must be a list of link names");
    for (const Json& name : failed) {
      if (!name.is_string()) fail(Code::kInvalidArgument, origin, ": failed_links holds ", name.dump(), ", not a name");
      fail_cable(f, name.get<std::string>(), origin);
    }
  }
  return c;
}

void fail_cable(Fabric& f, const std::string& name, const std::string& origin) {
  // "leaf3", "leaf3.up" and "leaf3.down" name one cable's both directions.
  std::string base = name;
  for (const char* suffix : {".up", ".down"})
    if (base.size() > std::strlen(suffix) &&
        base.compare(base.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      base.resize(base.size() - std::strlen(suffix));
  for (const char* dir : {".up", ".down"}) {
    const int id = f.find(base + dir);
    if (id < 0)
      fail(Code::kInvalidArgument, origin, ": failed link '", name,
           "' is not in the cluster (names: node3.nic5, leaf12, pod2 ", "and the like, as collsim prints them)");
    Link& l = f.link(id);
    if (!l.network)
      fail(Code::kInvalidArgument, origin, ": '", name, "' is not a network link (NVLink does not fail here)");
    if (l.cables == 0) fail(Code::kInvalidArgument, origin, ": every cable of '", name, "' has failed already");
    l.bytes_per_s -= l.bytes_per_s / l.cables;
    --l.cables;
  }
}

Cluster load_cluster(const std::string& path, int ranks, const std::string& tuning_path) {
  const std::string text = read_file(path, "cluster file");
  if (tuning_path.empty()) return parse_cluster(text, path, ranks);
  const Tuning tuning{read_file(tuning_path, "tuning file"), tuning_path};
  return parse_cluster(text, path, ranks, &tuning);
}

}  // namespace coll::sim
