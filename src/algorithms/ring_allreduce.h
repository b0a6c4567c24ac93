#pragma once

#include "algorithms/schedule.h"

namespace coll::algo {

struct AllreduceShape {
  int rank = 0;
  int nranks = 1;
  size_t count = 0;       // elements
  size_t elem_size = 1;   // bytes
  bool in_place = false;  // send and recv are the same memory
  bool average = false;   // add the single division of COLL_AVG
  size_t chunk_bytes = 1 << 19;
};

// Ring allreduce (reduce-scatter then allgather), pipelined in chunks.
Schedule ring_allreduce(const AllreduceShape& shape);

}  // namespace coll::algo
