// Recursive doubling allreduce, for small messages — Thakur, Rabenseifner &
// Gropp 2005: at distance d = 1, 2, ..., p/2 every rank exchanges its whole
// vector with partner (rank xor d) and reduces. log2(p) steps instead of the
// ring's 2(n-1), at the price of sending the whole vector each step. A rank
// count that is not a power of two is folded first (fold.h).
//
// Cost for S bytes: log2(p) (alpha + S beta + S gamma), plus
// 2 alpha + 2 S beta + S gamma when n is not a power of two.
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/common.h"
#include "algorithms/fold.h"
#include "algorithms/partition.h"

namespace coll::algo {

Schedule recursive_doubling_allreduce(const CollShape& shape) {
  const size_t es = shape.elem_size, chunk = shape.chunk_elems(), bytes = shape.count * es;
  ScheduleBuilder b("recursive_doubling", es, shape.send_offset, shape.nranks > 1 ? bytes : 0);
  if (nothing_to_move(b, shape)) return b.finish();
  Fold fold(shape.rank, shape.nranks);
  BufferId current = fold_in(b, fold, shape);
  const Span all{0, shape.count};
  if (fold.active()) {
    for (int d = 1; d < fold.p; d *= 2) {
      const int partner = fold.real_rank(fold.new_rank ^ d);
      // Reduce into the other of output and scratch, never into what is being
      // sent: a send may complete only once the partner has read it (TCP past
      // its buffers, shared memory's single copy), and the partner reads only
      // after its own send — waiting for our send here would deadlock.
      // In place, the input is the output: it counts as the output here.
      const bool in_output = current == BufferId::kRecv || (current == BufferId::kSend && shape.in_place());
      const BufferId next = in_output ? BufferId::kScratch : BufferId::kRecv;
      for_each_chunk(all, chunk, [&](const Span& piece) {
        b.send(partner, Region{current, piece.offset * es}, piece.count * es);
      });
      // Both ranks reduce the pair's data: the lower rank's first on both, for the same bits.
      for_each_chunk(all, chunk, [&](const Span& piece) {
        b.recv_reduce(partner, Region{current, piece.offset * es}, Region{next, piece.offset * es}, piece.count * es,
                      partner < shape.rank);
      });
      current = next;
    }
    if (current == BufferId::kScratch) b.copy({BufferId::kScratch, 0}, {BufferId::kRecv, 0}, bytes);
    if (current == BufferId::kSend && !shape.in_place()) b.copy({BufferId::kSend, 0}, {BufferId::kRecv, 0}, bytes);
    if (shape.average) b.divide({BufferId::kRecv, 0}, bytes);
  }
  fold_out(b, fold, shape);
  return b.finish();
}

}  // namespace coll::algo
