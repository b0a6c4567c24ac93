// A collective on buffers that the transports cannot move (device memory
// over shm, tcp, or ib without GPUDirect), cut into chunks that pass
// through host staging slots: each chunk is copied in, run as an ordinary
// host operation on the slots, and copied out. Pure: which bytes go where.
#pragma once

#include "core/comm.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace coll::staging {

// rows x width bytes, each row `pitch` bytes after the one before.
struct Copy2D {
  void* dst;
  size_t dst_pitch;
  const void* src;
  size_t src_pitch;
  size_t width;
  size_t rows;
};

// Two slots (one chunk in flight, one being copied), each an input and an
// output area of `bytes`.
struct Slots {
  void* in[2];
  void* out[2];
  size_t bytes;
};

struct Chunk {
  OpRequest host;             // the chunk's operation on slot `slot`
  std::optional<Copy2D> in;   // the caller's buffer to the slot; none where this rank gives nothing
  std::optional<Copy2D> out;  // the slot to the caller's buffer; none where this rank gets nothing
  int slot;
};

// The chunks of `op` on rank `rank` of `nranks`, in order. Every rank gets
// the same number of chunks of the same counts (they depend only on the
// call's count, dtype and nranks, and the slots' size, which is the same
// setting everywhere). A count of 0 is one empty chunk: the collective still
// takes place.
std::vector<Chunk> chunks_of(const OpRequest& op, int rank, int nranks, const Slots& slots);

}  // namespace coll::staging
