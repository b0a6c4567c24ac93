// A check the multi-rank tests share: a communicator's size, this rank's
// place in it, and an exact int64 sum of (rank + 1) over it.
#pragma once

#include "support/clock.h"

#include <coll/coll.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace coll::testing {

// Returns whether the allreduce itself succeeded (the other checks are
// recorded as gtest failures either way).
inline bool expect_place_and_sum(coll_comm_t comm, int size, int rank) {
  int got_size = -1, got_rank = -1;
  coll_comm_size(comm, &got_size);
  coll_comm_rank(comm, &got_rank);
  EXPECT_EQ(got_size, size);
  EXPECT_EQ(got_rank, rank);
  int64_t sum = rank + 1;
  const coll_result_t r = coll_allreduce(&sum, &sum, 1, COLL_INT64, COLL_SUM, comm, nullptr);
  EXPECT_EQ(r, COLL_SUCCESS) << last_error(comm);
  if (r == COLL_SUCCESS) EXPECT_EQ(sum, int64_t{size} * (size + 1) / 2);
  return r == COLL_SUCCESS;
}

}  // namespace coll::testing
