// Ranks that run one program up to who their peers are. When every node
// holds the same number of ranks, in order, and an algorithm treats the
// nodes alike (the ring, the hierarchical allreduce), rank g of node n does
// what rank g of node 0 does, with every peer shifted by n nodes: the
// schedules are symmetric under translation by one node. The simulator
// then runs node 0's ranks only, each standing for its class (docs/SIMULATION.md).
#pragma once

#include "algorithms/schedule.h"
#include "algorithms/select.h"

#include <algorithm>
#include <cstddef>
#include <optional>
#include <vector>

namespace coll::sim {

class Symmetry {
 public:
  // Classes of ranks equal modulo `period` (ranks per node); period ==
  // nranks is no symmetry at all: every rank a class of its own.
  Symmetry(int nranks, int period) : nranks_(nranks), period_(period) {}

  int nranks() const { return nranks_; }
  int classes() const { return period_; }
  int members() const { return nranks_ / period_; }  // of each class
  int class_of(int rank) const { return rank % period_; }
  // Class c's representative is rank c; its k-th member is c + k period.
  int member(int cls, int k) const { return cls + k * period_; }
  // The peer of `member` where its representative's is `rep_peer`, and back.
  int image(int member, int rep_peer) const { return wrap(rep_peer + shift(member)); }
  int preimage(int member, int peer) const { return wrap(peer - shift(member)); }
  // Message sizes that stand for each other: equal without a symmetry; with
  // one, to within what the parts of an unevenly divided vector differ by.
  bool same_size(size_t a, size_t b, size_t elem_size) const {
    if (period_ == nranks_) return a == b;
    const size_t diff = a > b ? a - b : b - a;
    return diff <= 16 * elem_size + std::max(a, b) / 100;
  }

 private:
  int shift(int member) const { return member - member % period_; }
  int wrap(int r) const { return ((r % nranks_) + nranks_) % nranks_; }

  int nranks_;
  int period_;
};

struct SymmetricPlan {
  Symmetry symmetry;
  std::vector<algo::Schedule> schedules;  // the representatives': node 0's ranks
  // Every step waits for the same earlier steps on every node. Not so in
  // the hierarchical allreduce: ranks of different nodes own different
  // parts of their node's block, which arrive in different chunks of it;
  // node 0's dependencies then stand for all.
  bool same_dependencies = true;
};

// The symmetry of `algorithm` on `shape` (whose node_of places the ranks),
// with node 0's schedules, if every node holds the same number of ranks in
// order and the schedules of sampled nodes (the second, the middle and the
// last) are node 0's shifted: the same steps, with sizes to within an
// element per chunk (as a vector divides), each peer shifted by as many
// nodes. nullopt otherwise.
std::optional<SymmetricPlan> find_symmetry(const algo::Algorithm& algorithm, algo::CollShape shape);

}  // namespace coll::sim
