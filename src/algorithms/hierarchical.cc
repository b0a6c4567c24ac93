// Hierarchical allreduce, for ranks on several nodes whose links between
// nodes are the slow ones — the two-level scheme of Horovod's hierarchical
// allreduce and of NCCL's rings per rail (Sergeev & Del Balso, "Horovod",
// 2018; Jia et al., "Highly scalable deep learning training system with
// mixed-precision", 2018):
//
//   With N nodes of L ranks each, the vector cut into L blocks:
//   1. inside each node, a ring reduce-scatter: local rank i ends with
//      block i summed over its node;
//   2. across nodes, the ranks of local index i (rail i) ring-allreduce
//      block i: L rails at once, each carrying 1/L of the vector, [AVG:
//      each divides the part it owns once, before sharing it];
//   3. inside each node, a ring allgather of the L blocks.
//   Every transfer is chunked, so the phases pipeline chunk by chunk.
//
// Cost for S bytes (in: inside a node, out: between nodes):
//   2(L-1) alpha_in + 2 (L-1)/L S beta_in + (L-1)/L S gamma
//   + 2(N-1) alpha_out + 2 (N-1)/N S/L beta_out + (N-1)/N S/L gamma
// Between nodes each rank moves 2(N-1)/N S/L bytes where a flat ring's
// busiest link moves 2(n-1)/n S. Nodes of unequal size have no rails: the
// algorithm is then the ring.
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/common.h"
#include "algorithms/partition.h"

namespace coll::algo {
namespace {

// A ring among `members` (this rank is members[me]) over `whole` (elements
// of kRecv, worked on in place), cut into one block per member.
struct SubRing {
  const std::vector<int>& members;
  int me;
  Span whole;

  int m() const { return static_cast<int>(members.size()); }
  int next() const { return members[static_cast<size_t>(wrap(me + 1, m()))]; }
  int prev() const { return members[static_cast<size_t>(wrap(me - 1, m()))]; }
  Span block(long i) const {
    Span s = block_span(whole.count, m(), wrap(i, m()));
    s.offset += whole.offset;
    return s;
  }
};

// The m-1 steps of a ring pass. Reduce-scatter: step s sends block
// (me-s-1) and reduces block (me-s-2) into place, so member k ends with
// block k reduced over all. Allgather: step s sends block (me-s) and stores
// block (me-s-1), from member k starting with block k to all holding all.
void ring_pass(ScheduleBuilder& b, const SubRing& ring, size_t chunk, bool reduce) {
  const size_t es = b.elem_size();
  const int back = reduce ? 1 : 0;  // reduce-scatter works one block behind
  for (int s = 0; s + 1 < ring.m(); ++s) {
    const Span out = ring.block(ring.me - s - back), in = ring.block(ring.me - s - back - 1);
    for_chunks(out, in, chunk, [&](size_t c) {
      if (c < chunk_count(out.count, chunk)) {
        Span piece = chunk_span(out, chunk, c);
        b.send(ring.next(), at(BufferId::kRecv, piece, es), piece.count * es);
      }
      if (c < chunk_count(in.count, chunk)) {
        Span piece = chunk_span(in, chunk, c);
        if (reduce)
          b.recv_reduce(ring.prev(), at(BufferId::kRecv, piece, es), at(BufferId::kRecv, piece, es), piece.count * es);
        else
          b.recv(ring.prev(), at(BufferId::kRecv, piece, es), piece.count * es);
      }
    });
  }
}

}  // namespace

// Node size when every node has the same number of ranks, else 0.
int ranks_per_node(const CollShape& shape) {
  if (shape.node_of.size() != static_cast<size_t>(shape.nranks)) return shape.node_of.empty() ? shape.nranks : 0;
  int nodes = 0;
  for (int n : shape.node_of) nodes = std::max(nodes, n + 1);
  std::vector<int> size(static_cast<size_t>(nodes), 0);
  for (int n : shape.node_of) ++size[static_cast<size_t>(n)];
  for (int s : size)
    if (s != size[0]) return 0;
  return size[0];
}

Schedule hierarchical_allreduce(const CollShape& shape) {
  const int L = ranks_per_node(shape);
  if (L == 0) return ring_allreduce(shape);  // no rails to run on
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  ScheduleBuilder b("hierarchical", es, shape.send_offset);
  if (nothing_to_move(b, shape)) return b.finish();
  // This rank's node and rail (the ranks of its local index), in rank order.
  auto node_of = [&](int r) { return shape.node_of.empty() ? 0 : shape.node_of[static_cast<size_t>(r)]; };
  std::vector<int> local_index(static_cast<size_t>(shape.nranks)), seen(static_cast<size_t>(shape.nranks), 0);
  for (int r = 0; r < shape.nranks; ++r) local_index[static_cast<size_t>(r)] = seen[static_cast<size_t>(node_of(r))]++;
  std::vector<int> local, rail;
  for (int r = 0; r < shape.nranks; ++r) {
    if (node_of(r) == node_of(shape.rank)) local.push_back(r);
    if (local_index[static_cast<size_t>(r)] == local_index[static_cast<size_t>(shape.rank)]) rail.push_back(r);
  }
  const int i = local_index[static_cast<size_t>(shape.rank)];
  const int j = static_cast<int>(std::find(rail.begin(), rail.end(), shape.rank) - rail.begin());

  // Everything works in place on the output.
  if (!shape.in_place()) b.copy({BufferId::kSend, 0}, {BufferId::kRecv, 0}, shape.count * es);
  const SubRing in_node{local, i, Span{0, shape.count}};
  ring_pass(b, in_node, chunk, /*reduce=*/true);  // 1
  const SubRing across{rail, j, in_node.block(i)};
  ring_pass(b, across, chunk, /*reduce=*/true);  // 2
  if (shape.average) {
    for_each_chunk(across.block(j), chunk,
                   [&](const Span& piece) { b.divide(at(BufferId::kRecv, piece, es), piece.count * es); });
  }
  ring_pass(b, across, chunk, /*reduce=*/false);
  ring_pass(b, in_node, chunk, /*reduce=*/false);  // 3
  return b.finish();
}

}  // namespace coll::algo
