#include "sim/symmetry.h"

#include "algorithms/algorithms.h"
#include "base/error.h"

namespace coll::sim {
bool is_image(const algo::Schedule& rep, const algo::Schedule& other, const Symmetry& sym, int cls, int k,
              bool& same_dependencies) {
  if (rep.steps.size() != other.steps.size()) return false;
  for (size_t i = 0; i < rep.steps.size(); ++i) {
    const algo::Step& a = rep.steps[i];
    const algo::Step& b = other.steps[i];
    if (a.kind != b.kind || !sym.same_size(a.bytes, b.bytes, rep.elem_size)) return false;
    same_dependencies = same_dependencies && a.deps == b.deps;
    if ((a.peer < 0) != (b.peer < 0) || (a.peer >= 0 && sym.find_image(cls, k, a.peer) != b.peer)) return false;
  }
  return true;
}

int contiguous_ranks_per_node(const algo::CollShape& shape) {
  const int d = shape.node_of.empty() ? 0 : algo::ranks_per_node(shape);  // nodes of equal size, or 0
  for (size_t r = 0; d > 0 && r < shape.node_of.size(); ++r)
    if (shape.node_of[r] != static_cast<int>(r) / d) return 0;
  return d;
}

Symmetry::Symmetry(int nranks, int lanes, int roles, std::vector<Class> classes, std::vector<int> alike)
    : nranks_(nranks), period_(nranks), roles_(roles), listed_(std::move(classes)), alike_(std::move(alike)) {
  where_.assign(static_cast<size_t>(lanes), std::vector<std::pair<int, int>>(static_cast<size_t>(nranks), {-1, -1}));
  for (size_t c = 0; c < listed_.size(); ++c)
    for (size_t k = 0; k < listed_[c].members.size(); ++k)
      where_[static_cast<size_t>(listed_[c].lane)][static_cast<size_t>(listed_[c].members[k])] = {static_cast<int>(c),
                                                                                                  static_cast<int>(k)};
}

// The slot in which class cls's k-th member has `peer`, -1 where none.
int Symmetry::slot(int cls, int k, int peer) const {
  const std::vector<int>& peers = listed_[static_cast<size_t>(cls)].peers;
  for (int s = 0; s < roles_; ++s)
    if (peers[static_cast<size_t>(k * roles_ + s)] == peer) return s;
  return -1;
}

std::optional<int> Symmetry::find_image(int cls, int k, int rep_peer) const {
  if (listed_.empty()) return wrap(rep_peer + k * period_);
  const int s = slot(cls, 0, rep_peer);
  if (s < 0) return std::nullopt;
  return listed_[static_cast<size_t>(cls)].peers[static_cast<size_t>(k * roles_ + s)];
}

int Symmetry::image(int cls, int k, int rep_peer) const {
  const std::optional<int> peer = find_image(cls, k, rep_peer);
  if (!peer) fail(Code::kInternal, "simulate: rank ", member(cls, 0), " has no peer ", rep_peer, " in its class");
  return *peer;
}

std::pair<int, int> Symmetry::counterpart(int cls, int peer) const {
  const int me = representative(cls);
  if (listed_.empty()) return {peer % period_, wrap(me - (peer - peer % period_))};
  const auto [theirs, k] =
      where_[static_cast<size_t>(listed_[static_cast<size_t>(cls)].lane)][static_cast<size_t>(peer)];
  if (theirs < 0) fail(Code::kInternal, "simulate: rank ", peer, " is in no class of its lane");
  // peer has me in some slot; its representative has, in that slot, the rank to message.
  const int s = slot(theirs, k, me);
  if (s < 0) fail(Code::kInternal, "simulate: rank ", peer, " has no peer ", me, " in its class");
  return {theirs, listed_[static_cast<size_t>(theirs)].peers[static_cast<size_t>(s)]};
}

std::string Symmetry::describe() const {
  if (listed_.empty())
    return str_cat("node 0's ", period_, " ranks simulated, each for the ", members(0),
                   " ranks of its place on every node");
  return str_cat(listed_.size(), " classes simulated, each for the ranks alike in their place in one of the ",
                 where_.size(), " trees");
}

std::optional<SymmetricPlan> find_symmetry(const algo::Algorithm& algorithm, algo::CollShape shape) {
  const int d = contiguous_ranks_per_node(shape);
  const int n = shape.nranks;
  if (d == 0 || d == n) return std::nullopt;
  SymmetricPlan p{Symmetry(n, d), {}, true};
  for (int r = 0; r < d; ++r) {
    shape.rank = r;
    p.schedules.push_back(algo::build_schedule(algorithm, shape));
  }
  const int nodes = n / d;
  for (int node : {1, nodes / 2, nodes - 1})
    for (int g = 0; g < d; ++g) {
      shape.rank = node * d + g;
      if (!is_image(p.schedules[static_cast<size_t>(g)], algo::build_schedule(algorithm, shape), p.symmetry, g, node,
                    p.same_dependencies))
        return std::nullopt;
    }
  return p;
}

}  // namespace coll::sim
