// Classes of ranks for the double binary tree's allreduce across nodes
// (algorithms/tree.cc), where no translation maps one node's schedules onto
// another's: a node's place in each tree differs from node to node.
//
// The two trees carry the two halves of the vector and never wait for each
// other, so each tree's steps are classed by that tree alone: nodes alike
// in their place in tree w (colour refinement: the same links, to nodes
// alike in turn) form a class, and so do the ranks at one place of their
// nodes' chains. Every member of such a class runs its representative's
// steps of tree w with its own peers, so the messages pair exactly; their
// times are the class's (its members' mean latency, docs/SIMULATION.md).
// 12 500 nodes fall into 50 classes per tree: 800 classes of 8 ranks stand
// for 100 000 ranks.
#pragma once

#include "algorithms/select.h"
#include "sim/symmetry.h"

#include <optional>

namespace coll::sim {

// The classes and the representatives' steps of one tree each, if
// `algorithm` is the tree allreduce and every node holds the same number of
// ranks in order; checked against one more member of every class. nullopt
// otherwise.
std::optional<SymmetricPlan> find_tree_classes(const algo::Algorithm& algorithm, algo::CollShape shape);

}  // namespace coll::sim
