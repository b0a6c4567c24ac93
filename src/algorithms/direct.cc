// Direct (one-shot) algorithms: every message goes straight to the rank that
// needs it, in one step.
//
//   allreduce: every rank sends its whole vector to every other rank and
//     reduces the n vectors itself, in rank order, so that every rank
//     computes the same bits. One latency instead of log2(n) or 2(n-1): the
//     choice for tiny messages between ranks of one node.
//   reduce: every rank sends its vector to the root, which reduces in rank order.
//   alltoall (pairwise exchange): at step i = 1..n-1 send block (r+i) to
//     rank r+i and receive block (r-i) from rank r-i; own block copied.
//
// Cost for S bytes: allreduce alpha + (n-1) S (beta + gamma); reduce the
// same at the root; alltoall (n-1) alpha + (n-1)/n S beta (S: the whole input).
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/common.h"
#include "algorithms/partition.h"

namespace coll::algo {
namespace {

// dst = x_0 op x_1 op ... op x_{n-1} in rank order; x_self is `own`, the
// others arrive from their ranks. Accumulates in scratch, so that an input
// that aliases the output is never overwritten while still being sent.
void reduce_in_rank_order(ScheduleBuilder& b, const CollShape& shape, Region own) {
  const size_t bytes = shape.count * b.elem_size();
  const Region acc{BufferId::kScratch, 0};
  for (int k = 0; k < shape.nranks; ++k) {
    if (k == shape.rank) {
      if (k == 0)
        b.copy(own, acc, bytes);
      else
        b.reduce(own, acc, bytes);
    } else if (k == 0) {
      b.recv(k, acc, bytes);
    } else {
      b.recv_reduce(k, acc, acc, bytes);
    }
  }
  if (shape.average) b.divide(acc, bytes);
  b.copy(acc, {BufferId::kRecv, 0}, bytes);
}

}  // namespace

Schedule direct_allreduce(const CollShape& shape) {
  const size_t bytes = shape.count * shape.elem_size;
  ScheduleBuilder b("direct", shape.elem_size, shape.send_offset, shape.nranks > 1 ? bytes : 0);
  if (nothing_to_move(b, shape)) return b.finish();
  for (int i = 1; i < shape.nranks; ++i) b.send(wrap(shape.rank + i, shape.nranks), {BufferId::kSend, 0}, bytes);
  reduce_in_rank_order(b, shape, {BufferId::kSend, 0});
  return b.finish();
}

Schedule direct_reduce(const CollShape& shape) {
  const size_t bytes = shape.count * shape.elem_size;
  const bool root = shape.rank == shape.root;
  ScheduleBuilder b("direct", shape.elem_size, shape.send_offset, root && shape.nranks > 1 ? bytes : 0);
  if (nothing_to_move(b, shape)) return b.finish();
  if (!root) {
    b.send(shape.root, {BufferId::kSend, 0}, bytes);
    return b.finish();
  }
  // The root receives from everyone; reduce_in_rank_order expects messages
  // from every rank but itself, which is exactly this.
  reduce_in_rank_order(b, shape, {BufferId::kSend, 0});
  return b.finish();
}

Schedule direct_alltoall(const CollShape& shape) {
  const int n = shape.nranks, r = shape.rank;
  const size_t es = shape.elem_size, block = shape.count * es;
  // In place, the input is first copied aside: otherwise receiving block p
  // would wait for block p to have left, and two ranks sending each other
  // more than a socket buffer would wait for each other forever.
  const bool aside = shape.in_place() && n > 1;
  ScheduleBuilder b("direct", es, shape.send_offset, aside ? block * static_cast<size_t>(n) : 0);
  if (shape.count == 0) return b.finish();
  const BufferId from = aside ? BufferId::kScratch : BufferId::kSend;
  if (aside) b.copy({BufferId::kSend, 0}, {BufferId::kScratch, 0}, block * static_cast<size_t>(n));
  if (!shape.in_place())
    b.copy({BufferId::kSend, block * static_cast<size_t>(r)}, {BufferId::kRecv, block * static_cast<size_t>(r)}, block);
  for (int i = 1; i < n; ++i) {
    const int to = wrap(r + i, n), source = wrap(r - i, n);
    b.send(to, {from, block * static_cast<size_t>(to)}, block);
    b.recv(source, {BufferId::kRecv, block * static_cast<size_t>(source)}, block);
  }
  return b.finish();
}

}  // namespace coll::algo
