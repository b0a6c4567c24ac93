// Small pieces every algorithm file shares.
#pragma once

#include "algorithms/builder.h"
#include "algorithms/collective.h"
#include "algorithms/partition.h"

namespace coll::algo {

// The bytes of a span of elements, as a region of one buffer.
inline Region at(BufferId buffer, const Span& span, size_t elem_size) {
  return Region{buffer, span.offset * elem_size};
}

// The cases with nothing to move: no elements, or one rank, whose result is
// its own input (copied unless in place; dividing by one changes nothing).
// True when the schedule is complete.
inline bool nothing_to_move(ScheduleBuilder& b, const CollShape& shape) {
  if (shape.count == 0) return true;
  if (shape.nranks > 1) return false;
  if (!shape.in_place()) b.copy({BufferId::kSend, 0}, {BufferId::kRecv, 0}, shape.count * shape.elem_size);
  return true;
}

}  // namespace coll::algo
