// The standard treatment of a rank count that is not a power of two, shared
// by recursive halving-doubling and recursive doubling (Thakur, Rabenseifner
// & Gropp 2005, section 4): fold the first 2*rem ranks pairwise before, and
// unfold after, so that a power-of-two group does the work.
#pragma once

#include "algorithms/builder.h"
#include "algorithms/collective.h"
#include "algorithms/partition.h"

namespace coll::algo {

struct Fold {
  int rank, n, p, rem;
  int new_rank;  // in 0..p-1, or -1 for an even rank that sits out

  Fold(int rank_, int n_) : rank(rank_), n(n_), p(power_of_two_floor(n_)), rem(n_ - p) {
    if (rank < 2 * rem)
      new_rank = rank % 2 == 1 ? rank / 2 : -1;
    else
      new_rank = rank - rem;
  }
  bool active() const { return new_rank >= 0; }
  // The real rank of new rank q.
  int real_rank(int q) const { return q < rem ? 2 * q + 1 : q + rem; }
};

// Before: an even rank of the first 2*rem sends its whole input to rank+1,
// which reduces it into its output. Returns where this rank's data now is.
inline BufferId fold_in(ScheduleBuilder& b, const Fold& f, const CollShape& shape) {
  if (f.rank >= 2 * f.rem) return BufferId::kSend;
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  const Span all{0, shape.count};
  for_each_chunk(all, chunk, [&](const Span& piece) {
    Region r{BufferId::kSend, piece.offset * es};
    if (f.active())
      b.recv_reduce(f.rank - 1, r, Region{BufferId::kRecv, piece.offset * es}, piece.count * es);
    else
      b.send(f.rank + 1, r, piece.count * es);
  });
  return f.active() ? BufferId::kRecv : BufferId::kSend;
}

// After: the odd rank sends the result down to the even rank that sat out.
inline void fold_out(ScheduleBuilder& b, const Fold& f, const CollShape& shape) {
  if (f.rank >= 2 * f.rem) return;
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  const Span all{0, shape.count};
  for_each_chunk(all, chunk, [&](const Span& piece) {
    Region r{BufferId::kRecv, piece.offset * es};
    if (f.active())
      b.send(f.rank - 1, r, piece.count * es);
    else
      b.recv(f.rank + 1, r, piece.count * es);
  });
}

}  // namespace coll::algo
