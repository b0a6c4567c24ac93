// Point-to-point, groups, barrier, split communicators and non-blocking
// operations, with real processes.
#include "support/multirank.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

namespace coll::testing {
namespace {

std::vector<int32_t> pattern(int from, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<int32_t>(from * 1000003 + i);
  return v;
}

// Every rank sends to the next and receives from the previous, sends first:
// without a group, two ranks sending each other more than a socket buffer
// would wait forever; inside one, it cannot deadlock.
TEST(PointToPoint, ARingOfSendsInsideAGroupNeverDeadlocks) {
  for (int n : {2, 3, 5}) {
    run_ranks(
        n,
        [](int rank, int n, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, n, id);
          ASSERT_NE(comm, nullptr);
          for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{4} << 20}) {
            auto out = pattern(rank, count);
            std::vector<int32_t> in(count, -1);
            ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
            ASSERT_EQ(coll_send(out.data(), count, COLL_INT32, (rank + 1) % n, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(coll_recv(in.data(), count, COLL_INT32, (rank + n - 1) % n, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
            EXPECT_EQ(in, pattern((rank + n - 1) % n, count)) << "count " << count;
          }
          coll_comm_destroy(comm);
        },
        RankOptions{.limit_s = 120, .env = {{"COLL_TIMEOUT_MS", "60000"}}});
  }
}

TEST(PointToPoint, BlockingPairsMatchInOrderAndCheckSizes) {
  run_ranks(
      3,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        if (rank == 0) {
          for (int k = 0; k < 5; ++k) {
            auto v = pattern(k, 100 + k);
            ASSERT_EQ(coll_send(v.data(), v.size(), COLL_INT32, 2, comm, nullptr), COLL_SUCCESS)
                << coll_get_last_error(comm);
          }
        } else if (rank == 2) {
          for (int k = 0; k < 5; ++k) {
            std::vector<int32_t> v(100 + k);
            ASSERT_EQ(coll_recv(v.data(), v.size(), COLL_INT32, 0, comm, nullptr), COLL_SUCCESS)
                << coll_get_last_error(comm);
            EXPECT_EQ(v, pattern(k, 100 + k));
          }
        }
        // Rank 1 took no part; a collective afterwards still lines up.
        std::vector<int32_t> x(3, rank);
        ASSERT_EQ(coll_allreduce(x.data(), x.data(), 3, COLL_INT32, COLL_SUM, comm, nullptr), COLL_SUCCESS)
            << coll_get_last_error(comm);
        EXPECT_EQ(x[0], 3);
        // The peer must be in range; a blocking send to the own rank has
        // nothing to answer it (p2p_semantics_test has the rest).
        EXPECT_EQ(coll_send(x.data(), 1, COLL_INT32, rank, comm, nullptr), COLL_INVALID_USAGE);
        EXPECT_EQ(coll_recv(x.data(), 1, COLL_INT32, n, comm, nullptr), COLL_INVALID_ARGUMENT);
        EXPECT_NE(std::string(coll_get_last_error(comm)).find("peer"), std::string::npos);
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "30000"}}});
}

TEST(Group, MisuseIsRefused) {
  EXPECT_EQ(coll_group_end(), COLL_INVALID_USAGE);
  run_ranks(2, [](int rank, int n, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, n, id);
    ASSERT_NE(comm, nullptr);
    float v = 1;
    coll_request_t req = nullptr;
    // A non-blocking call inside a group is refused, and fails the group: nothing in it runs.
    ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
    EXPECT_EQ(coll_allreduce(&v, &v, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
    EXPECT_EQ(coll_allreduce_async(&v, &v, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr, &req), COLL_INVALID_USAGE);
    EXPECT_EQ(coll_group_end(), COLL_INVALID_USAGE);
    EXPECT_NE(std::string(coll_get_last_error(comm)).find("nothing in the group ran"), std::string::npos)
        << coll_get_last_error(comm);
    EXPECT_EQ(v, 1.0f) << "a failed group ran its allreduce";
    // Collectives inside a group run together at the end, in order.
    float a = 1, b = 2;
    ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
    EXPECT_EQ(coll_allreduce(&a, &a, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
    EXPECT_EQ(coll_allreduce(&b, &b, 1, COLL_FLOAT32, COLL_MAX, comm, nullptr), COLL_SUCCESS);
    EXPECT_EQ(a, 1.0f) << "a grouped call must not run before coll_group_end";
    EXPECT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
    EXPECT_EQ(a, 2.0f);
    EXPECT_EQ(b, 2.0f);
    coll_comm_destroy(comm);
  });
}

// One rank's first grouped call is refused (a null buffer). Run without it,
// its second would meet the peer's first, and report success with the
// wrong sum: the group fails instead, and its abort ends the peer's.
TEST(Group, ARefusedCallFailsTheWholeGroup) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        int64_t a = 10 + rank, b = 100 + rank;
        ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
        EXPECT_EQ(coll_allreduce(rank == 1 ? nullptr : &a, &a, 1, COLL_INT64, COLL_SUM, comm, nullptr),
                  rank == 1 ? COLL_INVALID_ARGUMENT : COLL_SUCCESS);
        EXPECT_EQ(coll_allreduce(&b, &b, 1, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        const coll_result_t ended = coll_group_end();
        if (rank == 1) {
          EXPECT_EQ(ended, COLL_INVALID_ARGUMENT);
          const std::string why = coll_get_last_error(comm);
          EXPECT_NE(why.find("nothing in the group ran"), std::string::npos) << why;
          EXPECT_NE(why.find("sendbuf"), std::string::npos) << "the refusal named: " << why;
          EXPECT_EQ(b, 101) << "the group ran its second allreduce against the peer's first";
          ASSERT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
        } else {
          EXPECT_EQ(ended, COLL_REMOTE_ERROR) << coll_get_last_error(comm);
        }
        coll_comm_destroy(comm);
      },
      RankOptions{.env = {{"COLL_TIMEOUT_MS", "30000"}}});
}

// The job's communicator and its twin (a split of it with one color): two
// communicators over the same ranks, for groups that span communicators.
// The twin is null where either failed (the failure reported).
std::pair<coll_comm_t, coll_comm_t> world_and_twin(int rank, int n, const coll_unique_id_t& id) {
  coll_comm_t world = init_or_die(rank, n, id), twin = nullptr;
  if (world != nullptr) {
    EXPECT_EQ(coll_comm_split(world, 0, rank, &twin), COLL_SUCCESS) << coll_get_last_error(world);
  }
  return {world, twin};
}

// A group over two communicators, each rank grouping them in another
// order: run one after the other, each rank would wait in its first for
// the other's (NCCL runs a group's communicators together).
TEST(Group, SpansCommunicatorsInAnyOrder) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        const auto [world, twin] = world_and_twin(rank, n, id);
        ASSERT_NE(twin, nullptr);
        std::vector<int32_t> x(100003, rank + 1), y(100003, 10 * (rank + 1));
        ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
        for (coll_comm_t c : rank == 0 ? std::vector{world, twin} : std::vector{twin, world}) {
          std::vector<int32_t>& v = c == world ? x : y;
          EXPECT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_INT32, COLL_SUM, c, nullptr), COLL_SUCCESS);
        }
        EXPECT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(world) << " / " << coll_get_last_error(twin);
        EXPECT_EQ(x[0], 3);
        EXPECT_EQ(x[100002], 3);
        EXPECT_EQ(y[0], 30);
        EXPECT_EQ(y[100002], 30);
        coll_comm_destroy(twin);
        coll_comm_destroy(world);
      },
      RankOptions{.env = {{"COLL_TIMEOUT_MS", "20000"}}});
}

// A group over two communicators whose part on the second is refused when
// group_end compiles it (a send to the own rank without its receive): the
// first's allreduce must not run either. Had it run, rank 1's lone
// allreduce would have met it (11), and rank 0's next one nothing.
TEST(Group, APartRefusedAtTheEndRunsNoOtherPart) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        const auto [world, twin] = world_and_twin(rank, n, id);
        ASSERT_NE(twin, nullptr);
        int32_t x = rank == 0 ? 1 : 10, alone = 5;
        if (rank == 0) {
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          EXPECT_EQ(coll_allreduce(&x, &x, 1, COLL_INT32, COLL_SUM, world, nullptr), COLL_SUCCESS);
          EXPECT_EQ(coll_send(&alone, 1, COLL_INT32, 0, twin, nullptr), COLL_SUCCESS);
          EXPECT_EQ(coll_group_end(), COLL_INVALID_USAGE);
          const std::string why = coll_get_last_error(world);
          EXPECT_NE(why.find("nothing in the group ran"), std::string::npos) << why;
          EXPECT_NE(why.find("has no receive"), std::string::npos) << "the refusal named: " << why;
          EXPECT_EQ(x, 1) << "the group's allreduce ran";
          x = 1000;
        }
        EXPECT_EQ(coll_allreduce(&x, &x, 1, COLL_INT32, COLL_SUM, world, nullptr), COLL_SUCCESS)
            << coll_get_last_error(world);
        EXPECT_EQ(x, 1010);
        coll_comm_destroy(twin);
        coll_comm_destroy(world);
      },
      RankOptions{.env = {{"COLL_TIMEOUT_MS", "10000"}}});
}

TEST(Barrier, NoRankLeavesBeforeTheLastArrives) {
  run_ranks(5, [](int rank, int n, const coll_unique_id_t& id) {
    coll_comm_t comm = init_or_die(rank, n, id);
    ASSERT_NE(comm, nullptr);
    ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS);  // everyone connected and here
    // Rank 3 arrives 400 ms late. The steady clock is the machine's
    // (CLOCK_MONOTONIC), so its arrival and every rank's departure compare
    // across processes, however late a loaded machine ran any rank.
    const auto ns = [] { return std::chrono::steady_clock::now().time_since_epoch().count(); };
    int64_t arrived = 0;
    if (rank == 3) {
      usleep(400000);
      arrived = ns();
    }
    ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << coll_get_last_error(comm);
    const int64_t left = ns();
    ASSERT_EQ(coll_broadcast(&arrived, 1, COLL_INT64, 3, comm, nullptr), COLL_SUCCESS);
    EXPECT_GE(left, arrived) << "rank " << rank << " left the barrier " << (arrived - left) / 1000
                             << " us before rank 3 arrived";
    coll_comm_destroy(comm);
  });
}

// Split by parity, ranked in reverse; the child and the parent then run
// collectives at the same time (the parent's in the background).
TEST(Split, ChildrenRunAlongsideTheirParent) {
  run_ranks(
      6,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t world = init_or_die(rank, n, id);
        ASSERT_NE(world, nullptr);
        coll_comm_t half = nullptr, none = reinterpret_cast<coll_comm_t>(1);
        ASSERT_EQ(coll_comm_split(world, rank % 2, -rank, &half), COLL_SUCCESS) << coll_get_last_error(world);
        ASSERT_NE(half, nullptr);
        int hr = -1, hn = -1;
        coll_comm_rank(half, &hr);
        coll_comm_size(half, &hn);
        EXPECT_EQ(hn, 3);
        EXPECT_EQ(hr, 2 - rank / 2) << "keys are -rank: the highest rank comes first";

        std::vector<int64_t> big(1 << 20, rank);
        coll_request_t req = nullptr;
        ASSERT_EQ(coll_allreduce_async(big.data(), big.data(), big.size(), COLL_INT64, COLL_SUM, world, nullptr, &req),
                  COLL_SUCCESS);
        int64_t mine = rank;
        ASSERT_EQ(coll_allreduce(&mine, &mine, 1, COLL_INT64, COLL_SUM, half, nullptr), COLL_SUCCESS)
            << coll_get_last_error(half);
        EXPECT_EQ(mine, rank % 2 == 0 ? 0 + 2 + 4 : 1 + 3 + 5);
        ASSERT_EQ(coll_wait(req), COLL_SUCCESS) << coll_get_last_error(world);
        EXPECT_EQ(big[12345], 15);

        // Ranks that pass COLL_SPLIT_NOCOLOR get no communicator.
        ASSERT_EQ(coll_comm_split(world, rank == 0 ? 7 : COLL_SPLIT_NOCOLOR, 0, &none), COLL_SUCCESS);
        if (rank == 0) {
          ASSERT_NE(none, nullptr);
          int size = 0;
          coll_comm_size(none, &size);
          EXPECT_EQ(size, 1);
          coll_comm_destroy(none);
        } else {
          EXPECT_EQ(none, nullptr);
        }
        EXPECT_EQ(coll_comm_split(world, -5, 0, &none), COLL_INVALID_ARGUMENT);
        coll_comm_destroy(half);
        coll_comm_destroy(world);
      },
      RankOptions{.limit_s = 120, .env = {{"COLL_TIMEOUT_MS", "60000"}}});
}

// A child outlives its parent (as after ncclCommDestroy or MPI_Comm_free
// of the parent): over tcp, where only ring neighbours connect at init,
// halving-doubling meets ranks 0 and 2 for the first time after every rank
// destroyed the parent, and the child splits again, both through the job's
// store.
TEST(Split, ChildrenOutliveTheirParent) {
  run_ranks(
      4,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t world = init_or_die(rank, n, id), child = nullptr, pair = nullptr;
        ASSERT_NE(world, nullptr);
        ASSERT_EQ(coll_comm_split(world, 0, rank, &child), COLL_SUCCESS) << coll_get_last_error(world);
        ASSERT_EQ(coll_barrier(world), COLL_SUCCESS) << coll_get_last_error(world);
        ASSERT_EQ(coll_comm_destroy(world), COLL_SUCCESS);
        ASSERT_EQ(coll_barrier(child), COLL_SUCCESS) << coll_get_last_error(child);  // every parent destroyed
        std::vector<int32_t> v(1009, rank + 1);
        ASSERT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_INT32, COLL_SUM, child, nullptr), COLL_SUCCESS)
            << coll_get_last_error(child);
        EXPECT_EQ(v[0], 10);
        EXPECT_EQ(v[1008], 10);
        ASSERT_EQ(coll_comm_split(child, rank % 2, rank, &pair), COLL_SUCCESS) << coll_get_last_error(child);
        int32_t mine = rank;
        ASSERT_EQ(coll_allreduce(&mine, &mine, 1, COLL_INT32, COLL_SUM, pair, nullptr), COLL_SUCCESS)
            << coll_get_last_error(pair);
        EXPECT_EQ(mine, rank % 2 == 0 ? 0 + 2 : 1 + 3);
        coll_comm_destroy(pair);
        coll_comm_destroy(child);
      },
      RankOptions{
          .env = {{"COLL_TIMEOUT_MS", "10000"}, {"COLL_TRANSPORTS", "tcp"}, {"COLL_ALGO", "halving_doubling"}}});
}

// Several operations in flight; coll_test completes them out of order; a
// blocking call after them waits its turn.
TEST(Async, SeveralInFlightCompletedOutOfOrder) {
  run_ranks(
      4,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        const size_t count = 1 << 18;
        std::vector<std::vector<float>> data(3, std::vector<float>(count));
        std::vector<int32_t> gathered(4 * 8);
        std::vector<int32_t> mine(8, rank);
        coll_request_t req[4] = {};
        for (int k = 0; k < 3; ++k) {
          std::fill(data[k].begin(), data[k].end(), static_cast<float>(rank + k));
          ASSERT_EQ(coll_allreduce_async(data[k].data(), data[k].data(), count, COLL_FLOAT32, COLL_SUM, comm, nullptr,
                                         &req[k]),
                    COLL_SUCCESS);
        }
        ASSERT_EQ(coll_allgather_async(mine.data(), gathered.data(), 8, COLL_INT32, comm, nullptr, &req[3]),
                  COLL_SUCCESS);
        // Complete the last first, by polling.
        coll_result_t r;
        while ((r = coll_test(req[3])) == COLL_IN_PROGRESS) usleep(100);
        ASSERT_EQ(r, COLL_SUCCESS) << coll_get_last_error(comm);
        for (int k : {2, 0, 1}) ASSERT_EQ(coll_wait(req[k]), COLL_SUCCESS) << coll_get_last_error(comm);
        for (int k = 0; k < 3; ++k) EXPECT_EQ(data[k][count - 1], static_cast<float>(6 + 4 * k));
        for (int p = 0; p < 4; ++p) EXPECT_EQ(gathered[p * 8 + 7], p);
        // A blocking call after non-blocking ones runs after them.
        float one = 1;
        ASSERT_EQ(coll_allreduce(&one, &one, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        EXPECT_EQ(one, 4.0f);
        // Bad arguments are refused at once, before anything is queued.
        coll_request_t bad = nullptr;
        EXPECT_EQ(coll_allreduce_async(nullptr, nullptr, 5, COLL_FLOAT32, COLL_SUM, comm, nullptr, &bad),
                  COLL_INVALID_ARGUMENT);
        EXPECT_EQ(bad, nullptr);
        EXPECT_EQ(coll_allreduce_async(&one, &one, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr, nullptr),
                  COLL_INVALID_ARGUMENT);
        EXPECT_EQ(coll_wait(nullptr), COLL_INVALID_ARGUMENT);
        // Every collective has a non-blocking form.
        std::vector<int32_t> v(12, rank), w(12);
        coll_request_t all[6];
        ASSERT_EQ(coll_broadcast_async(v.data(), 3, COLL_INT32, 1, comm, nullptr, &all[0]), COLL_SUCCESS);
        ASSERT_EQ(coll_reduce_async(v.data() + 3, w.data(), 3, COLL_INT32, COLL_SUM, 2, comm, nullptr, &all[1]),
                  COLL_SUCCESS);
        ASSERT_EQ(coll_reduce_scatter_async(v.data(), w.data() + 4, 1, COLL_INT32, COLL_MAX, comm, nullptr, &all[2]),
                  COLL_SUCCESS);
        ASSERT_EQ(coll_alltoall_async(v.data(), w.data() + 8, 1, COLL_INT32, comm, nullptr, &all[3]), COLL_SUCCESS);
        ASSERT_EQ(coll_barrier_async(comm, &all[4]), COLL_SUCCESS);
        int token = rank;
        if (rank == 0) ASSERT_EQ(coll_send_async(&token, 1, COLL_INT32, 1, comm, nullptr, &all[5]), COLL_SUCCESS);
        if (rank == 1) ASSERT_EQ(coll_recv_async(&token, 1, COLL_INT32, 0, comm, nullptr, &all[5]), COLL_SUCCESS);
        for (int k = 0; k < 5; ++k)
          ASSERT_EQ(coll_wait(all[k]), COLL_SUCCESS) << k << ": " << coll_get_last_error(comm);
        if (rank < 2) ASSERT_EQ(coll_wait(all[5]), COLL_SUCCESS) << coll_get_last_error(comm);
        // In issue order: v[0..3) became rank 1's ones before the others ran.
        EXPECT_EQ(v[0], 1);
        if (rank == 2) EXPECT_EQ(w[0], 0 + 1 + 2 + 3);                       // reduce of v[3] (= rank)
        EXPECT_EQ(w[4], rank == 3 ? 3 : 1);                                  // max over ranks of their v[rank]
        for (int p = 0; p < 4; ++p) EXPECT_EQ(w[8 + p], rank == 3 ? p : 1);  // v[rank] of rank p
        if (rank == 1) EXPECT_EQ(token, 0);
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 120, .env = {{"COLL_TIMEOUT_MS", "60000"}}});
}

}  // namespace
}  // namespace coll::testing

namespace coll::testing {
namespace {

// A rank killed with SIGKILL in the middle of a loop of allreduces: every
// survivor gets an error (not a hang) within the timeout, for each transport,
// and nothing is left in /dev/shm (run_ranks checks).
class KillMidLoop : public ::testing::TestWithParam<std::string> {};

TEST_P(KillMidLoop, SurvivorsGetAnErrorAndNothingIsLeft) {
  constexpr int kTimeoutMs = 5000;
  run_ranks(
      4,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        std::vector<float> v(1 << 16, 1.0f);
        auto start = std::chrono::steady_clock::now();
        coll_result_t r = COLL_SUCCESS;
        for (int i = 0; i < 100000 && r == COLL_SUCCESS; ++i) {
          if (rank == 2 && i == 20) raise(SIGKILL);
          r = coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_MAX, comm, nullptr);
          if (r == COLL_SUCCESS) start = std::chrono::steady_clock::now();
        }
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        EXPECT_TRUE(r == COLL_REMOTE_ERROR || r == COLL_TIMEOUT) << coll_get_error_string(r);
        EXPECT_LE(ms, kTimeoutMs + 2000.0) << "rank " << rank << ": " << coll_get_last_error(comm);
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 60,
                  .env = {{"COLL_TIMEOUT_MS", std::to_string(kTimeoutMs)}, {"COLL_TRANSPORTS", GetParam()}},
                  .killed_rank = 2});
}

INSTANTIATE_TEST_SUITE_P(Transports, KillMidLoop, ::testing::Values("tcp", "shm"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace coll::testing
