// Ring algorithms — Patarasuk & Yuan, "Bandwidth optimal all-reduce
// algorithms for clusters of workstations", JPDC 69(2), 2009; the pipelined
// chain broadcast is the ring with one sender.
//
// Terms: the n ranks form a ring, position p -> p+1 (shape.ring_order gives
// the rank at each position; by default rank p). Below, r is this rank's
// position and "block i" of a per-rank buffer is the block of the rank at
// position i. The data is cut into n blocks and
// each block into chunks of at most chunk_bytes, the unit of pipelining:
// chunk c of step s+1 may leave as soon as chunk c of step s arrived.
//
//   reduce-scatter, step s = 0..n-2: send block (r-s-1+k), receive block
//     (r-s-2+k) and reduce it; after n-1 steps rank r holds block r+k
//     reduced over all ranks (k = 1 inside allreduce, 0 for reduce_scatter).
//   allgather, step s = 0..n-2: send block (r-s), receive block (r-s-1).
//   allreduce = reduce-scatter, [AVG: divide the owned block], allgather.
//   broadcast: the chain root -> root+1 -> ... -> root-1, chunk by chunk.
//
// Cost for S bytes (alpha latency, beta seconds per byte, gamma seconds per
// reduced byte):
//   allreduce       2(n-1) alpha + 2 (n-1)/n S beta + (n-1)/n S gamma
//   reduce-scatter   (n-1) alpha +   (n-1)/n S beta + (n-1)/n S gamma   (S: whole input)
//   allgather        (n-1) alpha +   (n-1)/n S beta                     (S: whole output)
//   broadcast       (n-1+k-1) (alpha + S/k beta) for k chunks, about (n-1) alpha + S beta
#include "algorithms/algorithms.h"
#include "algorithms/builder.h"
#include "algorithms/common.h"
#include "algorithms/partition.h"

namespace coll::algo {
Schedule ring_allreduce(const CollShape& shape) {
  const Ring ring(shape.rank, shape.nranks, shape.ring_order);
  const int n = shape.nranks, r = ring.position();
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  ScheduleBuilder b("ring", es, shape.send_offset);
  if (nothing_to_move(b, shape)) return b.finish();
  const int next = ring.next(), prev = ring.prev();
  // Blocks of the vector go by position: every rank uses the same order.
  auto block = [&](long i) { return block_span(shape.count, n, wrap(i, n)); };

  for (int s = 0; s + 1 < n; ++s) {  // reduce-scatter
    const Span out = block(r - s), in = block(r - s - 1);
    for_chunks(out, in, chunk, [&](size_t c) {
      if (c < chunk_count(out.count, chunk)) {
        Span piece = chunk_span(out, chunk, c);
        // Step 0 sends the caller's own data; later steps forward what was just reduced.
        b.send(next, at(s == 0 ? BufferId::kSend : BufferId::kRecv, piece, es), piece.count * es);
      }
      if (c < chunk_count(in.count, chunk)) {
        Span piece = chunk_span(in, chunk, c);
        b.recv_reduce(prev, at(BufferId::kSend, piece, es), at(BufferId::kRecv, piece, es), piece.count * es);
      }
    });
  }
  if (shape.average) {  // the owner divides its fully reduced block once, before sharing it
    const Span own = block(r + 1);
    for_each_chunk(own, chunk, [&](const Span& piece) { b.divide(at(BufferId::kRecv, piece, es), piece.count * es); });
  }
  for (int s = 0; s + 1 < n; ++s) {  // allgather
    const Span out = block(r + 1 - s), in = block(r - s);
    for_chunks(out, in, chunk, [&](size_t c) {
      if (c < chunk_count(out.count, chunk)) {
        Span piece = chunk_span(out, chunk, c);
        b.send(next, at(BufferId::kRecv, piece, es), piece.count * es);
      }
      if (c < chunk_count(in.count, chunk)) {
        Span piece = chunk_span(in, chunk, c);
        b.recv(prev, at(BufferId::kRecv, piece, es), piece.count * es);
      }
    });
  }
  return b.finish();
}

// Input: n blocks of `count`; output: block r, reduced. Partial sums travel
// in scratch so that the input is never written (in place or not).
Schedule ring_reduce_scatter(const CollShape& shape) {
  const Ring ring(shape.rank, shape.nranks, shape.ring_order);
  const int n = shape.nranks, r = ring.position();
  const size_t es = shape.elem_size, chunk = shape.chunk_elems(), count = shape.count;
  ScheduleBuilder b("ring", es, shape.send_offset, n > 1 ? static_cast<size_t>(n) * count * es : 0);
  if (nothing_to_move(b, shape)) return b.finish();
  // Block i is the block of the rank at position i: the one it ends up owning.
  auto block = [&](long i) { return Span{static_cast<size_t>(ring.at(i)) * count, count}; };
  const int next = ring.next(), prev = ring.prev();
  for (int s = 0; s + 1 < n; ++s) {
    const Span out = block(r - s - 1), in = block(r - s - 2);
    const bool last = s + 2 == n;  // the block received now is ours: it goes to the output
    for (size_t c = 0; c < chunk_count(count, chunk); ++c) {
      Span piece = chunk_span(out, chunk, c);
      b.send(next, at(s == 0 ? BufferId::kSend : BufferId::kScratch, piece, es), piece.count * es);
      Span into = chunk_span(in, chunk, c);
      Region dst = last ? Region{BufferId::kRecv, (into.offset - in.offset) * es} : at(BufferId::kScratch, into, es);
      b.recv_reduce(prev, at(BufferId::kSend, into, es), dst, into.count * es);
    }
  }
  if (shape.average) b.divide({BufferId::kRecv, 0}, count * es);
  return b.finish();
}

// Input: `count` elements; output: n blocks of `count`, block r ours.
Schedule ring_allgather(const CollShape& shape) {
  const Ring ring(shape.rank, shape.nranks, shape.ring_order);
  const int n = shape.nranks, r = ring.position();
  const size_t es = shape.elem_size, chunk = shape.chunk_elems(), count = shape.count;
  ScheduleBuilder b("ring", es, shape.send_offset);
  if (count == 0) return b.finish();
  auto block = [&](long i) { return Span{static_cast<size_t>(ring.at(i)) * count, count}; };
  const Span own = block(r);
  if (!shape.in_place()) b.copy({BufferId::kSend, 0}, at(BufferId::kRecv, own, es), count * es);
  if (n == 1) return b.finish();
  const int next = ring.next(), prev = ring.prev();
  for (int s = 0; s + 1 < n; ++s) {
    const Span out = block(r - s), in = block(r - s - 1);
    for (size_t c = 0; c < chunk_count(count, chunk); ++c) {
      Span piece = chunk_span(out, chunk, c);
      // Our own block leaves from the input, without waiting for the copy.
      Region from = s == 0 ? Region{BufferId::kSend, (piece.offset - out.offset) * es} : at(BufferId::kRecv, piece, es);
      b.send(next, from, piece.count * es);
      Span into = chunk_span(in, chunk, c);
      b.recv(prev, at(BufferId::kRecv, into, es), into.count * es);
    }
  }
  return b.finish();
}

// The buffer is kRecv on every rank (the root's holds the data).
Schedule ring_broadcast(const CollShape& shape) {
  const Ring ring(shape.rank, shape.nranks, shape.ring_order);
  const int n = shape.nranks;
  const size_t es = shape.elem_size, chunk = shape.chunk_elems();
  ScheduleBuilder b("ring", es, shape.send_offset);
  if (shape.count == 0 || n == 1) return b.finish();
  const int position = wrap(ring.position() - ring.position_of(shape.root), n);  // 0 at the root, n-1 at the end
  const Span all{0, shape.count};
  for_each_chunk(all, chunk, [&](const Span& piece) {
    if (position > 0) b.recv(ring.prev(), at(BufferId::kRecv, piece, es), piece.count * es);
    if (position < n - 1) b.send(ring.next(), at(BufferId::kRecv, piece, es), piece.count * es);
  });
  return b.finish();
}

}  // namespace coll::algo
