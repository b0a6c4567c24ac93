#include "sim/symmetry.h"

#include "algorithms/algorithms.h"

namespace coll::sim {
namespace {

// Ranks per node, if node n holds ranks n*d .. n*d+d-1 for every n; 0 otherwise.
int contiguous_ranks_per_node(const algo::CollShape& shape) {
  const int d = shape.node_of.empty() ? 0 : algo::ranks_per_node(shape);  // nodes of equal size, or 0
  for (size_t r = 0; d > 0 && r < shape.node_of.size(); ++r)
    if (shape.node_of[r] != static_cast<int>(r) / d) return 0;
  return d;
}

bool shifted(const algo::Schedule& rep, const algo::Schedule& other, const Symmetry& sym, int member,
             bool& same_dependencies) {
  if (rep.steps.size() != other.steps.size()) return false;
  for (size_t i = 0; i < rep.steps.size(); ++i) {
    const algo::Step& a = rep.steps[i];
    const algo::Step& b = other.steps[i];
    if (a.kind != b.kind || !sym.same_size(a.bytes, b.bytes, rep.elem_size)) return false;
    same_dependencies = same_dependencies && a.deps == b.deps;
    if ((a.peer < 0) != (b.peer < 0) || (a.peer >= 0 && sym.image(member, a.peer) != b.peer)) return false;
  }
  return true;
}

}  // namespace

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
      if (!shifted(p.schedules[static_cast<size_t>(g)], algo::build_schedule(algorithm, shape), p.symmetry, shape.rank,
                   p.same_dependencies))
        return std::nullopt;
    }
  return p;
}

}  // namespace coll::sim
