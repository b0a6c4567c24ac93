// coll_comm_revoke with real processes, over shm and tcp: ranks blocked on
// a revoked communicator, ranks idle when it was revoked, and the revoking
// rank's own operation in progress (revoked from another thread), all return
// COLL_REVOKED long before their timeout, every later call is COLL_REVOKED,
// and the communicator can still be shrunk into a working one.
#include "support/clock.h"
#include "support/comm_checks.h"
#include "support/handshake.h"
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

constexpr int kRanks = 4;
constexpr double kFastMs = 5000;  // the timeout is 60 s

// nvlink is emulated: its frames' standing receives must not hide a revoke.
RankOptions options_for(const std::string& transports) {
  RankOptions options{.limit_s = 90, .env = {{"COLL_TIMEOUT_MS", "60000"}, {"COLL_TRANSPORTS", transports}}};
  if (transports == "nvlink") options.env["COLL_NVLINK_EMULATE"] = "1";
  return options;
}

// Every later call on comm is refused as revoked; a shrink that excludes
// nobody then gives all the ranks a communicator with exact results.
void later_calls_are_revoked_and_shrink_works(coll_comm_t comm, int rank) {
  float x = 1;
  EXPECT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_REVOKED) << last_error(comm);
  EXPECT_NE(last_error(comm).find("revoked"), std::string::npos) << last_error(comm);
  EXPECT_EQ(coll_barrier(comm), COLL_REVOKED) << last_error(comm);
  coll_comm_t fresh = nullptr;
  ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &fresh), COLL_SUCCESS) << last_error(comm);
  expect_place_and_sum(fresh, kRanks, rank);
  EXPECT_EQ(coll_comm_destroy(fresh), COLL_SUCCESS);
}

class Revoke : public ::testing::TestWithParam<std::string> {};

// Ranks 1 to 3 wait in an allreduce that rank 0 never joins; rank 0
// revokes. Each waiting rank returns COLL_REVOKED, naming the revocation.
TEST_P(Revoke, RanksWaitingOnTheCommunicatorReturnRevoked) {
  run_ranks_with_comm(
      kRanks,
      [](coll_comm_t comm, int rank, int) {
        std::vector<float> v(1 << 14, 1.0f);
        ASSERT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        if (rank == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          ASSERT_EQ(coll_comm_revoke(comm), COLL_SUCCESS) << last_error(comm);
          EXPECT_EQ(coll_comm_revoke(comm), COLL_SUCCESS) << "revoking twice is no error";
        } else {
          const auto start = Clock::now();
          EXPECT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_REVOKED)
              << last_error(comm);
          const double ms = ms_since(start);
          EXPECT_LT(ms, 300 + kFastMs) << "rank " << rank << " waited " << ms << " ms";
          EXPECT_NE(last_error(comm).find("revoked"), std::string::npos) << last_error(comm);
          std::printf("rank %d: the allreduce returned COLL_REVOKED after %.1f ms\n", rank, ms);
          coll_result_t async = COLL_SUCCESS;
          EXPECT_EQ(coll_comm_get_async_error(comm, &async), COLL_SUCCESS);
          EXPECT_EQ(async, COLL_REVOKED);
        }
        later_calls_are_revoked_and_shrink_works(comm, rank);
      },
      options_for(GetParam()), Destroy::kAnyResult);
}

// Rank 0 revokes while the others wait on a handshake, outside coll; their
// next allreduce returns COLL_REVOKED at once.
TEST_P(Revoke, RanksIdleWhenItWasRevokedLearnAtTheirNextCall) {
  Handshake revoked;
  run_ranks_with_comm(
      kRanks,
      [&revoked](coll_comm_t comm, int rank, int) {
        float x = 1;
        ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        if (rank == 0) {
          ASSERT_EQ(coll_comm_revoke(comm), COLL_SUCCESS) << last_error(comm);
          revoked.arrive();
        } else {
          ASSERT_TRUE(revoked.wait_for(1)) << "rank 0 never revoked";
          const auto start = Clock::now();
          EXPECT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_REVOKED) << last_error(comm);
          EXPECT_LT(ms_since(start), kFastMs) << last_error(comm);
        }
        later_calls_are_revoked_and_shrink_works(comm, rank);
      },
      options_for(GetParam()), Destroy::kAnyResult);
}

// Rank 0 waits alone in an allreduce (the others wait on a handshake) and
// another of its threads revokes: that allreduce ends with COLL_REVOKED,
// not as an abort, and the others' next call is COLL_REVOKED.
TEST_P(Revoke, TheRevokingRanksOwnOperationEndsRevoked) {
  Handshake ended;
  run_ranks_with_comm(
      kRanks,
      [&ended](coll_comm_t comm, int rank, int) {
        float x = 1;
        ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        if (rank == 0) {
          std::thread revoker([comm] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            EXPECT_EQ(coll_comm_revoke(comm), COLL_SUCCESS);
          });
          const auto start = Clock::now();
          EXPECT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_REVOKED) << last_error(comm);
          revoker.join();
          EXPECT_LT(ms_since(start), 300 + kFastMs);
          EXPECT_NE(last_error(comm).find("was revoked"), std::string::npos) << last_error(comm);
          ended.arrive();
        } else {
          ASSERT_TRUE(ended.wait_for(1)) << "rank 0's allreduce never ended";
          // What rank 0 sent before it revoked may still complete the first.
          coll_result_t r = COLL_SUCCESS;
          for (int i = 0; i < 3 && r == COLL_SUCCESS; ++i)
            r = coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr);
          EXPECT_EQ(r, COLL_REVOKED) << last_error(comm);
        }
        later_calls_are_revoked_and_shrink_works(comm, rank);
      },
      options_for(GetParam()), Destroy::kAnyResult);
}

INSTANTIATE_TEST_SUITE_P(Transports, Revoke, ::testing::Values("shm", "tcp", "nvlink"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace coll::testing
