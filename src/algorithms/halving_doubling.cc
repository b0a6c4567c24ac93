// Recursive halving-doubling allreduce — Rabenseifner 2004; Thakur,
// Rabenseifner & Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005.
//
// Terms: p = the largest power of two <= n, and rem = n - p.
//   fold (non-power-of-two): among the first 2*rem ranks, each even rank
//     sends its whole vector to the odd rank above it, which reduces it; the
//     even ranks then wait. The p remaining ranks get new ranks 0..p-1.
//   reduce-scatter by recursive halving: the vector is cut into p blocks; at
//     distance d = p/2, p/4, ..., 1 each rank keeps half of its current range
//     of blocks, sends the other half to partner (new rank xor d) and reduces
//     the half it receives. At the end new rank q holds block q.
//   [AVG: divide the owned block]
//   allgather by recursive doubling: d = 1, 2, ..., p/2, exchanging ranges.
//   unfold: each odd rank of the first 2*rem sends the result to its even one.
// Recursive doubling (recursive_doubling.cc) shares the fold and unfold.
//
// Cost for S bytes: 2 log2(p) alpha + 2 (p-1)/p S beta + (p-1)/p S gamma,
// plus 2 alpha + 2 S beta + S gamma when n is not a power of two.
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/common.h"
#include "algorithms/fold.h"
#include "algorithms/partition.h"

namespace coll::algo {
namespace {

// The elements of blocks [first, last) of `count` cut into p blocks.
Span blocks(size_t count, int p, int first, int last) {
  if (first >= last) return Span{block_span(count, p, first < p ? first : p - 1).offset, 0};
  Span a = block_span(count, p, first), z = block_span(count, p, last - 1);
  return Span{a.offset, z.offset + z.count - a.offset};
}

}  // namespace

Schedule halving_doubling_allreduce(const CollShape& shape) {
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  ScheduleBuilder b("halving_doubling", es, shape.send_offset);
  if (nothing_to_move(b, shape)) return b.finish();
  Fold fold(shape.rank, shape.nranks);
  BufferId current = fold_in(b, fold, shape);
  if (fold.active()) {
    const int p = fold.p, q = fold.new_rank;
    int lo = 0, hi = p;                    // our range of blocks
    for (int d = p / 2; d >= 1; d /= 2) {  // reduce-scatter by recursive halving
      const int partner = fold.real_rank(q ^ d), mid = lo + d;
      const bool lower = (q & d) == 0;
      const Span keep = lower ? blocks(shape.count, p, lo, mid) : blocks(shape.count, p, mid, hi);
      const Span give = lower ? blocks(shape.count, p, mid, hi) : blocks(shape.count, p, lo, mid);
      for_each_chunk(give, chunk,
                     [&](const Span& piece) { b.send(partner, at(current, piece, es), piece.count * es); });
      for_each_chunk(keep, chunk, [&](const Span& piece) {
        b.recv_reduce(partner, at(current, piece, es), at(BufferId::kRecv, piece, es), piece.count * es);
      });
      current = BufferId::kRecv;
      if (lower)
        hi = mid;
      else
        lo = mid;
    }
    if (shape.average) {
      Span own = blocks(shape.count, p, lo, hi);
      if (own.count > 0) b.divide(at(BufferId::kRecv, own, es), own.count * es);
    }
    for (int d = 1; d < p; d *= 2) {  // allgather by recursive doubling
      const int partner = fold.real_rank(q ^ d);
      const bool lower = (q & d) == 0;
      const Span mine = blocks(shape.count, p, lo, hi);
      const Span theirs = lower ? blocks(shape.count, p, hi, hi + d) : blocks(shape.count, p, lo - d, lo);
      for_each_chunk(mine, chunk,
                     [&](const Span& piece) { b.send(partner, at(BufferId::kRecv, piece, es), piece.count * es); });
      for_each_chunk(theirs, chunk,
                     [&](const Span& piece) { b.recv(partner, at(BufferId::kRecv, piece, es), piece.count * es); });
      if (lower)
        hi += d;
      else
        lo -= d;
    }
  }
  fold_out(b, fold, shape);
  return b.finish();
}

}  // namespace coll::algo
