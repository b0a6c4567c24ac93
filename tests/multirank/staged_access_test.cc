// The staged form of the direct-access allreduce (core/fastpath/peer_access_allreduce.cc):
// on one node, an allreduce of at least COLL_SHM_STAGED_BYTES on private
// buffers goes through every rank's staging. Exact for every datatype, op,
// count (0, 1, primes, several windows with a ragged last one) and rank
// count, in place and not, with and without non-temporal stores; proof that
// it ran (each rank maps every peer's staging, which /proc/self/maps shows);
// the plan below the threshold and when COLL_ALGO names an algorithm; the
// fall back when a rank has no staging; every path mixed under skew.
// (Mismatched calls and non-blocking ones, for both forms: direct_access_test.)
#include "support/handshake.h"
#include "support/multirank.h"
#include "support/shared_buffers.h"

#include <coll/coll.h>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <csignal>

#include <chrono>
#include <random>
#include <string>
#include <thread>

namespace coll::testing {
namespace {

class StagedAccess : public ::testing::TestWithParam<RanksStream> {};

TEST_P(StagedAccess, ExactForEveryTypeOpAndCount) {
  const int nranks = std::get<0>(GetParam());
  RankOptions options{.limit_s = 400,
                      .env = {{"COLL_TIMEOUT_MS", "120000"},
                              {"COLL_SHM_STAGED_BYTES", "0"},
                              {"COLL_SHM_STAGED_STREAM_BYTES", std::get<1>(GetParam())},
                              {"COLL_SHM_STAGED_STREAM_IN_PLACE", "1"}}};
  run_ranks_with_comm(
      nranks,
      [&](coll_comm_t comm, int rank, int n) {
        ASSERT_EQ(staging_mappings(), 0);
        // Windows of 2 MiB: the large float32 over two and a ragged third,
        // bfloat16 over two; int8 over three, below.
        bool ok =
            allreduce_matrix(comm, rank, n, kDirectTypes, kDirectOps, kDirectCounts, kDirectLarge, Memory::kPrivate);
        for (bool in_place : {false, true})
          ok = ok && private_case(comm, rank, n, COLL_INT8, COLL_MAX, 5242883, in_place);
        if (ok) {
          EXPECT_EQ(staging_mappings(), n) << "rank " << rank << ": its staging and every peer's";
          EXPECT_EQ(staging_mappings("rw"), n) << "rank " << rank << ": all writable (results come back in them)";
        }
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
        EXPECT_EQ(staging_mappings(), 0) << "rank " << rank << ": a staging mapped after coll_comm_destroy";
      },
      options, Destroy::kByBody);
}

INSTANTIATE_TEST_SUITE_P(Ranks, StagedAccess, ranks_and_streaming(), ranks_stream_name);

// A setting of the in-place rule that is none of auto, 0 and 1 fails init
// on every rank, naming it. Each rank's process stays until both inits have
// ended: rank 0's holds the bootstrap store, which the other's init may still
// be using when rank 0 refuses (it then fails to reach the store instead).
TEST(StagedAccess, ABadInPlaceSettingIsRefusedAtInit) {
  Handshake ended;
  run_ranks(
      2,
      [&ended](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = nullptr;
        EXPECT_EQ(coll_comm_init_rank(&comm, n, id, rank), COLL_INVALID_ARGUMENT);
        const std::string why = coll_get_last_error(nullptr);
        EXPECT_NE(why.find("COLL_SHM_STAGED_STREAM_IN_PLACE=yes must be auto, 0 or 1"), std::string::npos) << why;
        EXPECT_EQ(comm, nullptr);
        ended.arrive();
        EXPECT_TRUE(ended.wait_for(2)) << "the other rank's init never ended";
      },
      RankOptions{.env = {{"COLL_SHM_STAGED_STREAM_IN_PLACE", "yes"}, {"COLL_TIMEOUT_MS", "10000"}}});
}

// Below COLL_SHM_STAGED_BYTES (1M by default), and when COLL_ALGO names an
// allreduce algorithm, the plan runs and no staging is made.
TEST(StagedAccess, SmallOrNamedAlgorithmRunsThePlan) {
  for (const char* algo : {"", "ring"}) {
    run_ranks_with_comm(
        3,
        [&](coll_comm_t comm, int rank, int n) {
          EXPECT_TRUE(private_case(comm, rank, n, COLL_INT32, COLL_SUM, (1 << 18) - 1, false));  // 1 MiB - 4
          EXPECT_EQ(staging_mappings(), 0) << "rank " << rank << ": below the threshold";
          EXPECT_TRUE(private_case(comm, rank, n, COLL_INT32, COLL_SUM, 1 << 18, false));
          EXPECT_EQ(staging_mappings(), std::string(algo).empty() ? n : 0) << "rank " << rank << ": COLL_ALGO=" << algo;
        },
        RankOptions{.env = {{"COLL_ALGO", algo}}});
  }
}

// A rank that cannot make its staging (here: a file size limit below the
// staging's 4 MiB, which the ftruncate of its memfd obeys) offers none, and
// every rank runs the plan instead, exact, mapping no peer's staging. Once
// it can again, the staged form runs. (A descriptor limit would do too, but
// the sanitizers need descriptors of their own to report anything.)
TEST(StagedAccess, ARankWithoutStagingSendsEveryRankToThePlan) {
  run_ranks_with_comm(
      3,
      [](coll_comm_t comm, int rank, int n) {
        rlimit before{};
        ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &before), 0);
        if (rank == 1) {
          signal(SIGXFSZ, SIG_IGN);  // ftruncate fails with EFBIG instead of killing the process
          rlimit tight = before;
          tight.rlim_cur = 1 << 20;
          ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &tight), 0);
        }
        for (bool in_place : {false, true})
          EXPECT_TRUE(private_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, 65537, in_place));
        ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &before), 0);
        EXPECT_EQ(staging_mappings(), rank == 1 ? 0 : 1) << "rank " << rank << ": a peer's staging was mapped";
        EXPECT_TRUE(private_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, 65537, false));
        EXPECT_EQ(staging_mappings(), n) << "rank " << rank << ": the staged form did not run once it could";
      },
      RankOptions{.env = {{"COLL_SHM_STAGED_BYTES", "64K"}}});
}

// Every kind of allreduce in a random order that all ranks share, each rank
// sleeping a random while before each call: the staged form, the registered
// one, the plan, and the staged form on a communicator split off, back to
// back, so that a rank reuses its staging while a slow peer may still be
// on the call before. Exact every time.
TEST(StagedAccess, MixedWithEveryOtherPathUnderSkew) {
  run_ranks_with_comm(
      4,
      [](coll_comm_t comm, int rank, int n) {
        coll_comm_t half = nullptr;
        ASSERT_EQ(coll_comm_split(comm, rank % 2, rank, &half), COLL_SUCCESS) << coll_get_last_error(comm);
        std::mt19937 order(7), skew(static_cast<unsigned>(rank) + 100);
        for (int i = 0; i < 40 && !::testing::Test::HasFailure(); ++i) {
          const int kind = static_cast<int>(order() % 4);
          const bool in_place = order() % 2 == 0;
          const size_t count = 65537 + order() % 70000;
          std::this_thread::sleep_for(std::chrono::microseconds(skew() % 800));
          if (kind == 0) EXPECT_TRUE(private_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, count, in_place));
          if (kind == 1)
            EXPECT_TRUE(allreduce_case(comm, rank, n, COLL_INT32, COLL_MAX, count, in_place, Memory::kShared));
          if (kind == 2) EXPECT_TRUE(private_case(comm, rank, n, COLL_FLOAT64, COLL_AVG, 7, in_place));
          if (kind == 3) EXPECT_TRUE(private_case(half, rank / 2, n / 2, COLL_BFLOAT16, COLL_SUM, count, in_place));
        }
        EXPECT_GT(coll_mem_mappings("rw"), 0) << "rank " << rank << ": the registered form never ran";
        EXPECT_EQ(staging_mappings(), n + n / 2) << "rank " << rank << ": each communicator's stagings";
        EXPECT_EQ(coll_comm_destroy(half), COLL_SUCCESS);
      },
      RankOptions{.env = {{"COLL_SHM_MAPPED", "1"}, {"COLL_SHM_STAGED_BYTES", "64K"}}});
}

}  // namespace
}  // namespace coll::testing
