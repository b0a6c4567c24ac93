// Ring allreduce — Patarasuk & Yuan, "Bandwidth optimal all-reduce
// algorithms for clusters of workstations", JPDC 69(2), 2009.
//
// Terms: the n ranks form a ring r -> r+1. The buffer is cut into n blocks;
// each block is cut into chunks of at most chunk_bytes, the unit of
// pipelining: chunk c of step s+1 may leave as soon as chunk c of step s
// arrived, while later chunks of step s are still in flight.
//
//   reduce-scatter, step s = 0..n-2:
//     send block (r - s), receive block (r - s - 1) and reduce it into recv.
//     After n-1 steps rank r holds block (r + 1) reduced over all ranks.
//   [AVG: divide block (r + 1) once by n]
//   allgather, step s = 0..n-2:
//     send block (r + 1 - s), receive block (r - s) into recv.
//
// Cost, for S bytes, link latency alpha, inverse bandwidth beta and
// reduction cost gamma per byte:
//   T = 2 (n-1) alpha + 2 (n-1)/n S beta + (n-1)/n S gamma
// bandwidth-optimal, which is why busbw = algbw * 2 (n-1)/n.
#include "algorithms/ring_allreduce.h"

#include "algorithms/partition.h"

namespace coll::algo {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

struct Builder {
  Schedule schedule;

  uint32_t add(Step step) {
    schedule.steps.push_back(std::move(step));
    return static_cast<uint32_t>(schedule.steps.size() - 1);
  }
};

std::vector<uint32_t> deps_of(std::initializer_list<uint32_t> list) {
  std::vector<uint32_t> out;
  for (uint32_t d : list)
    if (d != kNone) out.push_back(d);
  return out;
}

}  // namespace

Schedule ring_allreduce(const AllreduceShape& shape) {
  const int n = shape.nranks, r = shape.rank;
  const size_t es = shape.elem_size;
  Builder b;
  b.schedule.algorithm = "ring";
  b.schedule.elem_size = es;
  if (shape.count == 0) return b.schedule;

  if (n == 1) {
    if (!shape.in_place)
      b.add(Step{OpKind::kCopy, -1, {BufferId::kSend, 0}, {BufferId::kRecv, 0}, shape.count * es, {}});
    return b.schedule;  // dividing by one changes nothing
  }

  const int next = ring_peer_after(r, n), prev = ring_peer_before(r, n);
  const size_t chunk = shape.chunk_bytes / es > 0 ? shape.chunk_bytes / es : 1;
  auto block = [&](long index) { return block_span(shape.count, n, wrap(index, n)); };
  auto at = [&](BufferId id, const Span& s) { return Region{id, s.offset * es}; };

  // The last step that wrote, and the last that read, each chunk of each
  // block of recv: what a later step on that chunk must wait for.
  std::vector<std::vector<uint32_t>> writer(static_cast<size_t>(n)), reader(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    size_t chunks = chunk_count(block(i).count, chunk);
    writer[static_cast<size_t>(i)].assign(chunks, kNone);
    reader[static_cast<size_t>(i)].assign(chunks, kNone);
  }

  // Reduce-scatter.
  for (int s = 0; s + 1 < n; ++s) {
    const int out_block = wrap(r - s, n), in_block = wrap(r - s - 1, n);
    const Span out = block(out_block), in = block(in_block);
    const size_t chunks = std::max(chunk_count(out.count, chunk), chunk_count(in.count, chunk));
    for (size_t c = 0; c < chunks; ++c) {
      if (c < chunk_count(out.count, chunk)) {
        Span piece = chunk_span(out, chunk, c);
        // Step 0 sends the caller's own data; later steps forward what was just reduced.
        BufferId from = s == 0 ? BufferId::kSend : BufferId::kRecv;
        uint32_t& w = writer[static_cast<size_t>(out_block)][c];
        uint32_t id = b.add(Step{OpKind::kSend, next, at(from, piece), {}, piece.count * es, deps_of({w})});
        reader[static_cast<size_t>(out_block)][c] = id;
      }
      if (c < chunk_count(in.count, chunk)) {
        Span piece = chunk_span(in, chunk, c);
        uint32_t id = b.add(Step{
            OpKind::kRecvReduce, prev, at(BufferId::kSend, piece), at(BufferId::kRecv, piece), piece.count * es, {}});
        writer[static_cast<size_t>(in_block)][c] = id;
      }
    }
  }

  // AVG: the owner divides its fully reduced block once, before sharing it.
  const int owned = wrap(r + 1, n);
  if (shape.average) {
    const Span own = block(owned);
    for (size_t c = 0; c < chunk_count(own.count, chunk); ++c) {
      Span piece = chunk_span(own, chunk, c);
      uint32_t& w = writer[static_cast<size_t>(owned)][c];
      w = b.add(Step{OpKind::kDivide, -1, {}, at(BufferId::kRecv, piece), piece.count * es, deps_of({w})});
    }
  }

  // Allgather.
  for (int s = 0; s + 1 < n; ++s) {
    const int out_block = wrap(r + 1 - s, n), in_block = wrap(r - s, n);
    const Span out = block(out_block), in = block(in_block);
    const size_t chunks = std::max(chunk_count(out.count, chunk), chunk_count(in.count, chunk));
    for (size_t c = 0; c < chunks; ++c) {
      if (c < chunk_count(out.count, chunk)) {
        Span piece = chunk_span(out, chunk, c);
        uint32_t w = writer[static_cast<size_t>(out_block)][c];
        reader[static_cast<size_t>(out_block)][c] =
            b.add(Step{OpKind::kSend, next, at(BufferId::kRecv, piece), {}, piece.count * es, deps_of({w})});
      }
      if (c < chunk_count(in.count, chunk)) {
        Span piece = chunk_span(in, chunk, c);
        // In place, the receive overwrites memory an earlier send may still be reading.
        uint32_t rd = reader[static_cast<size_t>(in_block)][c];
        uint32_t w = writer[static_cast<size_t>(in_block)][c];
        writer[static_cast<size_t>(in_block)][c] =
            b.add(Step{OpKind::kRecv, prev, {}, at(BufferId::kRecv, piece), piece.count * es, deps_of({rd, w})});
      }
    }
  }
  return b.schedule;
}

}  // namespace coll::algo
