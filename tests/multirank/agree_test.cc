// coll_comm_agree with real processes: the AND of the live ranks' flags and
// the list of ranks gone, the same on every rank, when all are alive (also
// on a revoked communicator, several times in a row, and followed by a
// shrink at the same host), when a rank died before the call, and when the
// host dies after deciding but before its commit.
#include "core/test_hooks.h"
#include "support/clock.h"
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

constexpr int kRanks = 4;
const RankOptions kOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "20000"}}};

struct Agreed {
  int flag = 0;
  std::vector<int> gone;
};

Agreed agree(coll_comm_t comm, int flag) {
  Agreed a{flag, std::vector<int>(kRanks, -1)};
  int n = -1;
  EXPECT_EQ(coll_comm_agree(comm, &a.flag, a.gone.data(), &n), COLL_SUCCESS) << last_error(comm);
  a.gone.resize(static_cast<size_t>(n < 0 ? 0 : n));
  return a;
}

// This rank's communicator, once every rank has one (a barrier): null on failure.
coll_comm_t joined(int rank, int n, const coll_unique_id_t& id) {
  coll_comm_t comm = init_or_die(rank, n, id);
  if (comm == nullptr) return nullptr;
  EXPECT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
  return comm;
}

// The survivors of `comm` form a communicator and check that each got the
// same agreement: the rank with the fewest ranks gone and the one with the
// most must match, and so must the smallest and largest flag.
void expect_the_same_everywhere(coll_comm_t comm, const Agreed& a, int survivors) {
  coll_comm_t fresh = nullptr;
  ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &fresh), COLL_SUCCESS) << last_error(comm);
  int size = 0;
  coll_comm_size(fresh, &size);
  EXPECT_EQ(size, survivors);
  int64_t mine[2] = {a.flag, static_cast<int64_t>(a.gone.size())}, lo[2], hi[2];
  ASSERT_EQ(coll_allreduce(mine, lo, 2, COLL_INT64, COLL_MIN, fresh, nullptr), COLL_SUCCESS) << last_error(fresh);
  ASSERT_EQ(coll_allreduce(mine, hi, 2, COLL_INT64, COLL_MAX, fresh, nullptr), COLL_SUCCESS) << last_error(fresh);
  EXPECT_EQ(lo[0], hi[0]) << "the ranks returned different flags";
  EXPECT_EQ(lo[1], hi[1]) << "the ranks returned different lists of ranks gone";
  coll_comm_destroy(fresh);
}

// All alive: three agreements in a row, each the AND of every rank's flag,
// with nobody gone; then a revoke and a fourth on the revoked communicator;
// then a shrink, whose host has served the agreements already.
TEST(Agree, EveryRankGetsTheAndOfAllFlags) {
  run_ranks_with_comm(
      kRanks,
      [](coll_comm_t comm, int rank, int) {
        for (int round = 0; round < 3; ++round) {
          // Each rank clears a bit of its own: the AND has all four cleared.
          const int clear = 1 << (rank + 4 * round);
          const Agreed a = agree(comm, 0xfff ^ clear);
          EXPECT_EQ(a.flag, 0xfff ^ (0xf << (4 * round))) << "round " << round;
          EXPECT_TRUE(a.gone.empty()) << "round " << round << ": " << a.gone.size() << " gone";
        }
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
        if (rank == 2) ASSERT_EQ(coll_comm_revoke(comm), COLL_SUCCESS);
        const Agreed a = agree(comm, rank == 3 ? 6 : 7);
        EXPECT_EQ(a.flag, 6);
        EXPECT_TRUE(a.gone.empty());
        expect_the_same_everywhere(comm, a, kRanks);
      },
      kOptions, Destroy::kAnyResult);
}

// Rank 2 exits before the call. The others agree without waiting out the
// timeout, rank 2 is named gone, and its flag is not in the AND: each live
// rank clears its own bit of 0xf, so only rank 2's bit is left.
TEST(Agree, ARankFoundGoneIsLeftOutAndNamed) {
  run_ranks(
      kRanks,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = joined(rank, n, id);
        ASSERT_NE(comm, nullptr);
        if (rank == 2) leave_now();
        const auto start = Clock::now();
        const Agreed a = agree(comm, 0xf ^ (1 << rank));
        const double ms = ms_since(start);
        std::printf("rank %d: agreed in %.1f ms\n", rank, ms);
        EXPECT_LT(ms, 8000.0) << "the dead rank found only by the 20 s timeout";
        EXPECT_EQ(a.flag, 1 << 2);
        EXPECT_EQ(a.gone, std::vector<int>{2});
        expect_the_same_everywhere(comm, a, kRanks - 1);
        coll_comm_destroy(comm);
      },
      kOptions);
}

// Rank 0, the host, is killed where `arm` sets its hooks to kill it (and
// may delay others). Ranks 1 to 3 must agree well within the 20 s timeout,
// on what `expect` allows, and all on the same.
void agree_past_a_dying_host(void (*arm)(int rank), void (*expect)(const Agreed&)) {
  RankOptions options = kOptions;
  options.killed_rank = 0;
  run_ranks(
      kRanks,
      [&](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = joined(rank, n, id);
        ASSERT_NE(comm, nullptr);
        arm(rank);
        const auto start = Clock::now();
        const Agreed a = agree(comm, 0x10 | (0xf ^ (1 << rank)));  // a bit all set, and each clears its own
        const double ms = ms_since(start);
        std::printf("rank %d: agreed in %.1f ms on flag %#x with %zu gone\n", rank, ms, a.flag, a.gone.size());
        EXPECT_LT(ms, 8000.0) << "the dead host found only by the 20 s timeout";
        expect(a);
        expect_the_same_everywhere(comm, a, kRanks - 1);
        coll_comm_destroy(comm);
      },
      options);
}

// Rank 0 publishes its decision and is killed before it commits. Ranks 1
// to 3 meet again at rank 1: those that read the dead host's decision
// carry it there, and it stands; whichever way the race went, all three
// return the same flag and list.
TEST(Agree, AHostThatDiesBeforeCommittingLeavesOneDecision) {
  agree_past_a_dying_host(
      [](int rank) {
        if (rank == 0) test_hooks::agree_decided = [] { raise(SIGKILL); };
      },
      [](const Agreed& a) {
        // Rank 0's decision: every flag, nobody gone. Rank 1's own: rank 0 gone.
        if (a.gone.empty())
          EXPECT_EQ(a.flag, 0x10);
        else
          EXPECT_EQ(a.flag, 0x11) << "rank 0's bit is left when it took no part";
      });
}

// Rank 0 commits and is killed; rank 3 reads the commit only later, finds
// the host gone, and goes to rank 1, which has returned: it must find the
// committed decision there, not wait out the timeout or decide anew.
TEST(Agree, ALateRankFindsTheDecisionAfterTheHostDied) {
  agree_past_a_dying_host(
      [](int rank) {
        if (rank == 0) test_hooks::agree_committed = [] { raise(SIGKILL); };
        if (rank == 3)
          test_hooks::agree_reading_commit = [] { std::this_thread::sleep_for(std::chrono::milliseconds(500)); };
      },
      [](const Agreed& a) {
        EXPECT_EQ(a.flag, 0x10) << "rank 0's decision, with every flag";
        EXPECT_TRUE(a.gone.empty());
      });
}

// Rank 1 comes 3 s late, past the 2 s timeout: rank 0 decides without it,
// commits, and is killed. Ranks 2 and 3 return that decision and live on;
// rank 1, now the lowest live rank, must take their kept decision (which
// names it gone), not decide anew.
TEST(Agree, ALateRankTakesTheDecisionTheOthersKept) {
  RankOptions options{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "2000"}}, .killed_rank = 0};
  run_ranks(
      kRanks,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = joined(rank, n, id);
        ASSERT_NE(comm, nullptr);
        if (rank == 0) test_hooks::agree_committed = [] { raise(SIGKILL); };
        if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
        int flag = 0xf ^ (1 << rank), gone[kRanks], ngone = -1;
        const coll_result_t r = coll_comm_agree(comm, &flag, gone, &ngone);
        std::printf("rank %d: agree returned %d: %s\n", rank, r, last_error(comm).c_str());
        ASSERT_EQ(r, COLL_SUCCESS) << last_error(comm);
        EXPECT_EQ(flag, 0x2) << "rank " << rank << ": not the dead host's decision";
        ASSERT_EQ(ngone, 1);
        EXPECT_EQ(gone[0], 1);
        if (rank != 1) std::this_thread::sleep_for(std::chrono::seconds(4));  // alive while rank 1 looks
        coll_comm_destroy(comm);
      },
      options);
}

// Rank 3 destroys its communicator after an agreement (and lives on): the
// standby store that its agreement left must close with it, so the others'
// shrink finds it gone at once, not after the timeout.
TEST(Agree, ADestroyedCommunicatorsMeetingsEndWithIt) {
  run_ranks(
      kRanks,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        EXPECT_EQ(agree(comm, rank == 0 ? 1 : 3).flag, 1);
        if (rank == 3) {
          coll_comm_destroy(comm);
          std::this_thread::sleep_for(std::chrono::seconds(3));
          return;
        }
        const auto start = Clock::now();
        coll_comm_t survivors = nullptr;
        ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &survivors), COLL_SUCCESS) << last_error(comm);
        EXPECT_LT(ms_since(start), 2500.0) << "the destroyed communicator's standby was still listening";
        int size = 0;
        coll_comm_size(survivors, &size);
        EXPECT_EQ(size, kRanks - 1);
        coll_comm_destroy(survivors);
        coll_comm_destroy(comm);
      },
      kOptions);
}

}  // namespace
}  // namespace coll::testing
