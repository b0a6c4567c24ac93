// Ranks that run one program up to who their peers are. When every node
// holds the same number of ranks, in order, and an algorithm treats the
// nodes alike (the ring, the hierarchical allreduce), rank g of node n does
// what rank g of node 0 does, with every peer shifted by n nodes: the
// schedules are symmetric under translation by one node. The simulator
// then runs node 0's ranks only, each standing for its class. Where nodes
// differ by their place in a tree, the classes are listed instead
// (tree_classes.h), each with its members' peers (docs/SIMULATION.md).
#pragma once

#include "algorithms/schedule.h"
#include "algorithms/select.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace coll::sim {

class Symmetry {
 public:
  // No symmetry: every rank a class of its own.
  explicit Symmetry(int nranks) : Symmetry(nranks, nranks) {}
  // Classes of ranks equal modulo `period` (ranks per node); period ==
  // nranks is no symmetry at all.
  Symmetry(int nranks, int period) : nranks_(nranks), period_(period) {}
  // Classes listed (tree_classes.h): a class's members, each with its peers
  // in `roles` slots (-1 where none), slot by slot as its representative's.
  // A rank may be in one class per lane (the double tree's two trees).
  struct Class {
    int lane = 0;
    std::vector<int> members;  // the first is the representative
    std::vector<int> peers;    // members.size() x roles
  };
  // alike[r]: ranks of equal `alike` have their NICs loaded alike: of
  // nodes alike in their place in every lane.
  Symmetry(int nranks, int lanes, int roles, std::vector<Class> classes, std::vector<int> alike);

  int nranks() const { return nranks_; }
  bool none() const { return listed_.empty() && period_ == nranks_; }
  bool listed() const { return !listed_.empty(); }
  int classes() const { return listed_.empty() ? period_ : static_cast<int>(listed_.size()); }
  int members(int cls) const {
    return listed_.empty() ? nranks_ / period_ : static_cast<int>(listed_[static_cast<size_t>(cls)].members.size());
  }
  // Class c's k-th member; the representative is member 0.
  int member(int cls, int k) const {
    return listed_.empty() ? cls + k * period_ : listed_[static_cast<size_t>(cls)].members[static_cast<size_t>(k)];
  }
  int representative(int cls) const { return member(cls, 0); }
  // Ranks whose NICs carry equal loads share a number (0 for all under a translation).
  int alike_links(int rank) const { return alike_.empty() ? 0 : alike_[static_cast<size_t>(rank)]; }
  // The peer of class cls's k-th member where its representative's is `rep_peer`.
  int image(int cls, int k, int rep_peer) const;
  // The same, or nullopt where the representative has no such peer (listed classes).
  std::optional<int> find_image(int cls, int k, int rep_peer) const;
  int lane(int cls) const { return listed_.empty() ? 0 : listed_[static_cast<size_t>(cls)].lane; }
  // Class cls's representative messages `peer`: the class that plays
  // peer's part, and the rank that class's representative messages there.
  std::pair<int, int> counterpart(int cls, int peer) const;
  // Message sizes that stand for each other: equal without a translation;
  // with one, to within what the parts of an unevenly divided vector differ by.
  bool same_size(size_t a, size_t b, size_t elem_size) const {
    if (!listed_.empty() || period_ == nranks_) return a == b;
    const size_t diff = a > b ? a - b : b - a;
    return diff <= 16 * elem_size + std::max(a, b) / 100;
  }
  // What the classes are, for a reader: "node 0's 8 ranks ...".
  std::string describe() const;

 private:
  int wrap(int r) const { return ((r % nranks_) + nranks_) % nranks_; }
  int slot(int cls, int k, int peer) const;  // -1 where none

  int nranks_;
  int period_;
  int roles_ = 0;
  std::vector<Class> listed_;
  std::vector<std::vector<std::pair<int, int>>> where_;  // per lane, per rank: (class, member index)
  std::vector<int> alike_;
};

struct SymmetricPlan {
  Symmetry symmetry;
  std::vector<algo::Schedule> schedules;  // the representatives' (node 0's ranks), class by class
  // Every step waits for the same earlier steps on every node. Not so in
  // the hierarchical allreduce: ranks of different nodes own different
  // parts of their node's block, which arrive in different chunks of it;
  // node 0's dependencies then stand for all.
  bool same_dependencies = true;
};

// Whether `other`, the schedule of class cls's k-th member, is its
// representative's `rep` with that member's peers: the same steps and
// kinds, sizes that stand for each other (Symmetry::same_size). Clears
// same_dependencies where a step waits for other steps.
bool is_image(const algo::Schedule& rep, const algo::Schedule& other, const Symmetry& sym, int cls, int k,
              bool& same_dependencies);

// Ranks per node, if node n holds ranks n*d .. n*d+d-1 for every n; 0 otherwise.
int contiguous_ranks_per_node(const algo::CollShape& shape);

// The symmetry of `algorithm` on `shape` (whose node_of places the ranks),
// with node 0's schedules, if every node holds the same number of ranks in
// order and the schedules of sampled nodes (the second, the middle and the
// last) are node 0's shifted: the same steps, with sizes to within an
// element per chunk (as a vector divides), each peer shifted by as many
// nodes. nullopt otherwise.
std::optional<SymmetricPlan> find_symmetry(const algo::Algorithm& algorithm, algo::CollShape shape);

}  // namespace coll::sim
