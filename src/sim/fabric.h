// The cluster as the simulator sees it: links with a capacity and a
// latency, the ranks on them, and the path of links between two ranks.
// One link per direction of a cable or of an aggregate of cables: a leaf
// switch's uplinks are one link of their summed capacity (ECMP taken as
// perfectly balanced: docs/SIMULATION.md says what that leaves out).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace coll::sim {

// What the ends of a message cost, besides the wire.
struct Costs {
  double alpha_s = 0;           // per message, at the sender (software, the NIC's doorbell)
  double gamma_s_per_byte = 0;  // reducing a received byte (and the final division of AVG)
  double copy_s_per_byte = 0;   // a local copy
  // On CPU ranks (a node with a memory link), what their copies weigh on a
  // core and the memory, against a message's bytes crossing it once
  // (docs/SIMULATION.md, "The model"): a local copy or reduction's bytes;
  // a reducing receive's bytes on the receiver's core, and a local
  // reduction's beyond a copy's; and the receiver's read of a message
  // between two ranks of one core, from that core's own cache.
  double local_weight = 1;
  double reduce_weight = 1;
  double same_core_read_weight = 1;
  // A message between two CPU ranks of one node: its latency grows by this
  // for each other rank on the receiver's core (they take turns; the
  // receiver waits for its, whichever core the sender is on).
  double turn_s = 0;
};

struct Link {
  std::string name;  // "node3.gpu5.up", "leaf12.up", ...
  double bytes_per_s = 0;
  double latency_s = 0;
  int cables = 0;        // network cables it aggregates (a NIC's: 1) and that still work
  bool network = false;  // a NIC's or a switch's, which can fail; not NVLink
  int kind = -1;         // its kind (Fabric::kind_name): links that one node's or one rail's shift maps onto each other
};

class Fabric {
 public:
  // `kind` groups links that play the same part on different nodes or
  // switches ("nic3.up", "leaf.rail3.up"): the symmetric simulation pools
  // the load of a kind over its links.
  int add_link(std::string name, double bytes_per_s, double latency_s, int cables = 0, const std::string& kind = "");
  // The link of that name; -1 if there is none.
  int find(const std::string& name) const;
  const Link& link(int id) const { return links_[static_cast<size_t>(id)]; }
  Link& link(int id) { return links_[static_cast<size_t>(id)]; }
  int num_links() const { return static_cast<int>(links_.size()); }
  int num_kinds() const { return static_cast<int>(kinds_.size()); }
  const std::string& kind_name(int kind) const { return kinds_[static_cast<size_t>(kind)]; }

  // A rank: its node, and the links its traffic takes. Inside a node a
  // message goes up the sender's GPU link and down the receiver's; between
  // nodes, up the NIC, up through the switch levels until a group holds
  // both ends, and down again.
  struct Place {
    int node = 0;
    // A CPU rank (its node has a memory) has one link for both: its core.
    int gpu_up = -1, gpu_down = -1;
    // What every message between two ranks of the node also crosses, when
    // the node has one: the memory that CPU ranks' shared-memory copies
    // all go through (-1: none, as GPUs on NVLink switches).
    int memory = -1;
    int nic_up = -1, nic_down = -1;
    // The switch group holding this rank's NIC at each level (leaf, pod,
    // ...), and that group's links towards the level above.
    std::vector<int> group;
    std::vector<int> group_up, group_down;
  };
  void add_rank(Place place) { places_.push_back(std::move(place)); }
  int nranks() const { return static_cast<int>(places_.size()); }
  const Place& place(int rank) const { return places_[static_cast<size_t>(rank)]; }

  // The links from rank a to rank b, in order: inside a node the sender's
  // GPU link up, the node's memory where it has one, the receiver's down.
  std::vector<int> route(int a, int b) const;
  // What a rank's local copy or reduction crosses: its own link up and its
  // node's memory, where the node has one (CPU ranks); otherwise none, and
  // it costs the Costs' rate per byte alone.
  std::vector<int> local_route(int a) const;
  double latency(const std::vector<int>& route) const;

 private:
  std::vector<Link> links_;
  std::vector<Place> places_;
  std::vector<std::string> kinds_;
  std::map<std::string, int> kind_ids_;
};

}  // namespace coll::sim
