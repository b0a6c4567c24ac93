#include "core/staging/layout.h"

#include "base/error.h"
#include "reduce/dtype.h"

#include <algorithm>

namespace coll::staging {
namespace {

using algo::Collective;

// Rows of the caller's input and output per chunk: one block per rank where
// the buffer holds one for every rank.
size_t in_rows(Collective c, int nranks) {
  return c == Collective::kReduceScatter || c == Collective::kAlltoall ? static_cast<size_t>(nranks) : 1;
}
size_t out_rows(Collective c, int nranks) {
  return c == Collective::kAllgather || c == Collective::kAlltoall ? static_cast<size_t>(nranks) : 1;
}

bool gives(const OpRequest& op, int rank) {
  switch (op.collective) {
    case Collective::kBroadcast:
      return rank == op.root;
    case Collective::kRecv:
    case Collective::kBarrier:
      return false;
    default:
      return true;
  }
}

bool gets(const OpRequest& op, int rank) {
  switch (op.collective) {
    case Collective::kBroadcast:
      return rank != op.root;  // the root's buffer has the data already
    case Collective::kReduce:
      return rank == op.root;
    case Collective::kSend:
    case Collective::kBarrier:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::vector<Chunk> chunks_of(const OpRequest& op, int rank, int nranks, const Slots& slots) {
  const size_t es = reduce::datatype_size(op.dtype);
  const size_t rows = std::max(in_rows(op.collective, nranks), out_rows(op.collective, nranks));
  const size_t per_chunk = std::max<size_t>(1, slots.bytes / (rows * es));
  if (slots.bytes < rows * es)
    fail(Code::kInvalidArgument, "staging ", algo::collective_name(op.collective),
         " through host memory: ", slots.bytes, "-byte slots hold less than one element per rank (", rows, " x ", es,
         " bytes): raise COLL_STAGING_CHUNK_BYTES");
  const bool broadcast = op.collective == Collective::kBroadcast;
  std::vector<Chunk> chunks;
  size_t first = 0;
  do {
    const size_t n = std::min(per_chunk, op.count - first);
    const int s = static_cast<int>(chunks.size() % 2);
    Chunk c{.host = op, .in = std::nullopt, .out = std::nullopt, .slot = s};
    c.host.count = n;
    c.host.kind = MemoryKind::kHost;
    c.host.stream = nullptr;
    // Out of place on the slots; a broadcast has one buffer, the input slot.
    c.host.send = slots.in[s];
    c.host.recv = broadcast ? slots.in[s] : slots.out[s];
    c.host.send_offset = broadcast ? std::optional<int64_t>(0) : std::nullopt;
    const size_t width = n * es, pitch = op.count * es, offset = first * es;
    if (n > 0 && gives(op, rank))
      c.in = Copy2D{.dst = slots.in[s],
                    .dst_pitch = width,
                    .src = static_cast<const char*>(op.send) + offset,
                    .src_pitch = pitch,
                    .width = width,
                    .rows = in_rows(op.collective, nranks)};
    if (n > 0 && gets(op, rank))
      c.out = Copy2D{.dst = static_cast<char*>(op.recv) + offset,
                     .dst_pitch = pitch,
                     .src = c.host.recv,
                     .src_pitch = width,
                     .width = width,
                     .rows = out_rows(op.collective, nranks)};
    chunks.push_back(c);
    first += n;
  } while (first < op.count);
  return chunks;
}

}  // namespace coll::staging
