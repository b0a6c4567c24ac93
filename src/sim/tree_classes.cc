#include "sim/tree_classes.h"

#include "algorithms/algorithms.h"
#include "algorithms/partition.h"

#include <array>
#include <map>
#include <string>

namespace coll::sim {
namespace {

using algo::TreeLinks;

constexpr int kRoles = 4;  // a rank's links: parent, two children (node heads), the next rank of its chain

// Colour refinement: nodes start coloured by which links they have, then
// take the colours of their own and their links' nodes, until no colour
// splits. Nodes of one colour then have links to nodes of equal colours.
// Colours are numbered by their first node.
std::vector<int> refine(const std::vector<TreeLinks>& links) {
  std::vector<int> colour(links.size()), next(links.size());
  auto of = [&](int v) { return v < 0 ? -1 : colour[static_cast<size_t>(v)]; };
  size_t colours = 1;
  for (bool first = true;; first = false) {
    std::map<std::array<int, 4>, int> ids;
    for (size_t v = 0; v < links.size(); ++v) {
      const TreeLinks& t = links[v];
      const std::array<int, 4> key =
          first ? std::array<int, 4>{0, t.parent >= 0, t.children[0] >= 0, t.children[1] >= 0}
                : std::array<int, 4>{colour[v], of(t.parent), of(t.children[0]), of(t.children[1])};
      next[v] = ids.try_emplace(key, static_cast<int>(ids.size())).first->second;
    }
    colour.swap(next);
    if (!first && ids.size() == colours) return colour;
    colours = ids.size();
  }
}

// Rank r's steps on tree w's half of the vector (tree 0 carries the first
// `half_bytes`), their dependencies renumbered; nullopt if one waits for
// a step of the other tree.
std::optional<algo::Schedule> tree_steps(const algo::Schedule& all, size_t half_bytes, int w) {
  algo::Schedule out{all.algorithm, all.elem_size, all.scratch_bytes, all.send_offset, {}};
  std::vector<int64_t> renumbered(all.steps.size(), -1);
  for (size_t i = 0; i < all.steps.size(); ++i) {
    const algo::Step& s = all.steps[i];
    const size_t at = s.kind == algo::OpKind::kSend ? s.src.offset : s.dst.offset;
    if ((at < half_bytes ? 0 : 1) != w) continue;
    algo::Step t = s;
    t.deps.clear();
    for (uint32_t d : s.deps) {
      if (renumbered[d] < 0) return std::nullopt;
      t.deps.push_back(static_cast<uint32_t>(renumbered[d]));
    }
    renumbered[i] = static_cast<int64_t>(out.steps.size());
    out.steps.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::optional<SymmetricPlan> find_tree_classes(const algo::Algorithm& algorithm, algo::CollShape shape) {
  const int d = contiguous_ranks_per_node(shape);
  if (std::string(algorithm.name) != "tree" || shape.collective != algo::Collective::kAllreduce || d == 0 ||
      d == shape.nranks)
    return std::nullopt;
  const int nodes = shape.nranks / d;
  // The rank at place j of node v's chain in tree w (tree 1's chains run backwards).
  auto at = [&](int w, int v, int j) { return v < 0 ? -1 : v * d + (w == 0 ? j : d - 1 - j); };
  std::vector<Symmetry::Class> classes;
  std::map<std::pair<int, int>, int> pairs;  // a node's colours in both trees
  std::vector<int> colours[2];
  for (int w = 0; w < 2; ++w) {
    std::vector<TreeLinks> links;
    for (int v = 0; v < nodes; ++v) links.push_back(algo::double_tree(nodes, v, w));
    colours[w] = refine(links);
    const std::vector<int>& colour = colours[w];
    const size_t first = classes.size();
    for (int v = 0; v < nodes; ++v) {
      const size_t c = first + static_cast<size_t>(colour[static_cast<size_t>(v)]) * static_cast<size_t>(d);
      if (classes.size() <= c) classes.resize(c + static_cast<size_t>(d), Symmetry::Class{w, {}, {}});
      const TreeLinks& t = links[static_cast<size_t>(v)];
      for (int j = 0; j < d; ++j) {
        Symmetry::Class& cls = classes[c + static_cast<size_t>(j)];
        cls.members.push_back(at(w, v, j));
        const bool head = j == 0;
        cls.peers.insert(cls.peers.end(),
                         {head ? at(w, t.parent, 0) : at(w, v, j - 1), head ? at(w, t.children[0], 0) : -1,
                          head ? at(w, t.children[1], 0) : -1, j + 1 < d ? at(w, v, j + 1) : -1});
      }
    }
  }
  // A node's NICs carry what its chains' heads send and receive in both trees: alike on nodes of one pair of colours.
  std::vector<int> alike;
  for (int r = 0; r < shape.nranks; ++r) {
    const size_t v = static_cast<size_t>(r / d);
    alike.push_back(pairs.try_emplace({colours[0][v], colours[1][v]}, static_cast<int>(pairs.size())).first->second);
  }
  const size_t nclasses = classes.size();
  SymmetricPlan plan{Symmetry(shape.nranks, 2, kRoles, std::move(classes), std::move(alike)), {}, true};
  const Symmetry& sym = plan.symmetry;
  const size_t half_bytes = (shape.count / 2 + shape.count % 2) * shape.elem_size;
  auto steps_of = [&](int rank, int w) {
    shape.rank = rank;
    return tree_steps(algo::build_schedule(algorithm, shape), half_bytes, w);
  };
  for (int c = 0; c < static_cast<int>(nclasses); ++c) {
    std::optional<algo::Schedule> rep = steps_of(sym.representative(c), sym.lane(c));
    // Every peer of the representative in a slot (Symmetry::image counts on it), and its last member the
    // same steps with that member's peers, waiting for the same steps.
    bool same_dependencies = true;
    if (!rep || !is_image(*rep, *rep, sym, c, 0, same_dependencies)) return std::nullopt;
    const int k = sym.members(c) - 1;
    if (k > 0) {
      const std::optional<algo::Schedule> other = steps_of(sym.member(c, k), sym.lane(c));
      if (!other || !is_image(*rep, *other, sym, c, k, same_dependencies) || !same_dependencies) return std::nullopt;
    }
    plan.schedules.push_back(std::move(*rep));
  }
  return plan;
}

}  // namespace coll::sim
