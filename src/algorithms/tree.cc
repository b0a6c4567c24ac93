// Double binary tree — Sanders, Speck & Traeff, "Two-tree algorithms for
// full bandwidth broadcast, reduction and scan", Parallel Computing 35(12),
// 2009 (the form NCCL uses for allreduce).
//
// Terms: two binary trees over the ranks (partition.h: double_tree), built so
// that no rank is an inner node of both; each tree carries half of the data,
// so every rank sends and receives about S in total. Each half is cut into
// chunks that flow up (reduce) and down (broadcast) the tree pipelined.
//   reduce, per chunk: a leaf sends its input to its parent; an inner node
//     receives and reduces its children's chunks, then sends to its parent.
//   broadcast, per chunk: receive from the parent, send to the children.
//   allreduce = reduce to each tree's root, [AVG: the root divides], broadcast.
// On ranks of several nodes the allreduce's trees join the nodes, with a
// chain inside each node (partition.h: node_tree): each tree crosses
// between nodes only along its edges between nodes.
// For reduce and broadcast with a root, trees are laid over virtual ranks
// v = (rank - root) mod n, and each tree's root exchanges its half with v = 0
// (the real root) when it is not v = 0 itself: one extra hop.
//
// Cost for S bytes: allreduce about 2 log2(n) alpha + 2 S beta + S gamma
// (pipelined); reduce and broadcast about log2(n) alpha + S beta (+ S gamma).
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/common.h"
#include "algorithms/partition.h"

namespace coll::algo {
namespace {

// The two halves of a vector of `count` elements: tree 0 carries the first.
Span half(size_t count, int which) {
  size_t first = count / 2 + count % 2;
  return which == 0 ? Span{0, first} : Span{first, count - first};
}

int tree_root(int n, int which) {
  for (int v = 0; v < n; ++v)
    if (double_tree(n, v, which).parent < 0) return v;
  return 0;
}

// Reduce of one chunk up tree `which`, accumulating in `acc`; `input` is this
// rank's contribution. Returns after the send to the parent (if any).
void reduce_up(ScheduleBuilder& b, const TreeLinks& links, int (*to_rank)(int, int, int), int n, int root,
               const Span& piece, BufferId input, BufferId acc) {
  const size_t es = b.elem_size(), bytes = piece.count * es;
  BufferId current = input;
  for (int child : links.children) {
    if (child < 0) continue;
    b.recv_reduce(to_rank(child, root, n), at(current, piece, es), at(acc, piece, es), bytes);
    current = acc;
  }
  if (links.parent >= 0) b.send(to_rank(links.parent, root, n), at(current, piece, es), bytes);
}

int virtual_to_rank(int v, int root, int n) { return (v + root) % n; }

}  // namespace

Schedule tree_allreduce(const CollShape& shape) {
  const int n = shape.nranks, r = shape.rank;
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  ScheduleBuilder b("tree", es, shape.send_offset);
  if (nothing_to_move(b, shape)) return b.finish();
  const bool across_nodes = shape.node_of.size() == static_cast<size_t>(n) &&
                            *std::max_element(shape.node_of.begin(), shape.node_of.end()) > 0;
  auto double_tree = [&](int, int rank, int which) {
    return across_nodes ? node_tree(shape.node_of, rank, which) : algo::double_tree(n, rank, which);
  };
  const TreeLinks tree_links[2] = {double_tree(n, r, 0), double_tree(n, r, 1)};
  // Up both trees first, then down both: every rank enumerates messages in
  // this one order, which is how the two ends of each pair agree.
  for (int which = 0; which < 2; ++which) {
    const TreeLinks& links = tree_links[which];
    for_each_chunk(half(shape.count, which), chunk, [&](const Span& piece) {
      // A leaf's output stays empty until the broadcast fills it.
      reduce_up(b, links, virtual_to_rank, n, 0, piece, BufferId::kSend, BufferId::kRecv);
      if (links.parent < 0 && shape.average) b.divide(at(BufferId::kRecv, piece, es), piece.count * es);
    });
  }
  for (int which = 0; which < 2; ++which) {
    const TreeLinks& links = tree_links[which];
    for_each_chunk(half(shape.count, which), chunk, [&](const Span& piece) {
      if (links.parent >= 0) b.recv(links.parent, at(BufferId::kRecv, piece, es), piece.count * es);
      for (int child : links.children)
        if (child >= 0) b.send(child, at(BufferId::kRecv, piece, es), piece.count * es);
    });
  }
  return b.finish();
}

Schedule tree_reduce(const CollShape& shape) {
  const int n = shape.nranks, r = shape.rank, root = shape.root;
  const size_t es = shape.elem_size, chunk = shape.chunk_elems(), bytes = shape.count * es;
  const int v = wrap(r - root, n);
  // Only the root has an output; the others accumulate in scratch.
  const BufferId acc = v == 0 ? BufferId::kRecv : BufferId::kScratch;
  ScheduleBuilder b("tree", es, shape.send_offset, v == 0 || n == 1 ? 0 : bytes);
  if (nothing_to_move(b, shape)) return b.finish();
  for (int which = 0; which < 2; ++which) {
    TreeLinks links = double_tree(n, v, which);
    const int top = tree_root(n, which);
    for_each_chunk(half(shape.count, which), chunk, [&](const Span& piece) {
      const bool leaf = links.children[0] < 0 && links.children[1] < 0;
      reduce_up(b, links, virtual_to_rank, n, root, piece, BufferId::kSend, acc);
      if (v == top && v != 0) {  // hand the tree's result to the real root
        b.send(root, at(leaf ? BufferId::kSend : acc, piece, es), piece.count * es);
      } else if (v == 0 && top != 0) {
        b.recv(virtual_to_rank(top, root, n), at(BufferId::kRecv, piece, es), piece.count * es);
      }
      if (v == 0 && shape.average) b.divide(at(BufferId::kRecv, piece, es), piece.count * es);
    });
  }
  return b.finish();
}

// The buffer is kRecv on every rank (the root's holds the data).
Schedule tree_broadcast(const CollShape& shape) {
  const int n = shape.nranks, r = shape.rank, root = shape.root;
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  const int v = wrap(r - root, n);
  ScheduleBuilder b("tree", es, shape.send_offset);
  if (shape.count == 0 || n == 1) return b.finish();
  for (int which = 0; which < 2; ++which) {
    TreeLinks links = double_tree(n, v, which);
    const int top = tree_root(n, which);
    for_each_chunk(half(shape.count, which), chunk, [&](const Span& piece) {
      const Region data = at(BufferId::kRecv, piece, es);
      const size_t bytes = piece.count * es;
      // v = 0 already has the data: it feeds the tree's root, and its parent skips it.
      if (v == 0 && top != 0) b.send(virtual_to_rank(top, root, n), data, bytes);
      if (v != 0) {
        int from = v == top ? 0 : links.parent;
        b.recv(virtual_to_rank(from, root, n), data, bytes);
      }
      for (int child : links.children)
        if (child > 0) b.send(virtual_to_rank(child, root, n), data, bytes);
    });
  }
  return b.finish();
}

}  // namespace coll::algo
