// The one-shot allreduce (core/fastpath/board_allreduce.cc): on one node, an allreduce of at
// most COLL_SHM_ONESHOT_BYTES (the whole board, 4072) goes through every rank's board. Exact
// for every datatype, op, count (1, primes, the board's whole 4072 bytes)
// and rank count, in place and not, with the flight recorder as proof that
// it ran; the plan above the limit, at count 0, and when COLL_ALGO names an
// algorithm; ranks that disagree (on the count, the op, the collective, or
// the setting itself) all fail with COLL_INVALID_USAGE long before the
// timeout; an abort ends a wait on the board, and the peer learns why;
// non-blocking calls; rounds mixed with the plan's operations under skew.
// (kill -9 in the middle of one: fault_test's shm_oneshot trials.)
#include "support/handshake.h"
#include "support/last_algorithm.h"
#include "support/multirank.h"
#include "support/shared_buffers.h"

#include <coll/coll.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Counts whose bytes fit 2048 for every datatype: 1, small primes, and 251
// (2008 bytes of float64).
constexpr size_t kCounts[] = {1, 2, 3, 13, 61, 251};

class Oneshot : public ::testing::TestWithParam<int> {};

TEST_P(Oneshot, ExactForEveryTypeOpAndCount) {
  run_ranks_with_comm(
      GetParam(),
      [&](coll_comm_t comm, int rank, int n) {
        for (size_t count : kCounts)
          for (coll_datatype_t t : kDirectTypes)
            for (coll_redop_t op : kDirectOps)
              for (bool in_place : {false, true}) {
                ASSERT_TRUE(private_case(comm, rank, n, t, op, count, in_place));
                ASSERT_EQ(last_algorithm(comm), "board_allreduce") << reduce::datatype_name(t) << " count " << count;
              }
      },
      RankOptions{.limit_s = 200});
}

INSTANTIATE_TEST_SUITE_P(Ranks, Oneshot, ::testing::Values(2, 3, 4, 5, 8),
                         [](const auto& info) { return std::to_string(info.param) + "ranks"; });

// The whole board: 4072 bytes of int8, bfloat16 and float64, with
// COLL_SHM_ONESHOT_BYTES past it (the board bounds it); 4073 bytes run the plan.
TEST(OneshotLimits, TheWholeBoard) {
  run_ranks_with_comm(
      3,
      [](coll_comm_t comm, int rank, int n) {
        for (bool in_place : {false, true}) {
          EXPECT_TRUE(private_case(comm, rank, n, COLL_INT8, COLL_SUM, 4072, in_place));
          EXPECT_EQ(last_algorithm(comm), "board_allreduce");
          EXPECT_TRUE(private_case(comm, rank, n, COLL_BFLOAT16, COLL_AVG, 2036, in_place));
          EXPECT_EQ(last_algorithm(comm), "board_allreduce");
          EXPECT_TRUE(private_case(comm, rank, n, COLL_FLOAT64, COLL_PROD, 509, in_place));
          EXPECT_EQ(last_algorithm(comm), "board_allreduce");
          EXPECT_TRUE(private_case(comm, rank, n, COLL_INT8, COLL_MAX, 4073, in_place));
          EXPECT_NE(last_algorithm(comm), "board_allreduce") << "past the board";
        }
      },
      RankOptions{.env = {{"COLL_SHM_ONESHOT_BYTES", "1M"}}});
}

// Past COLL_SHM_ONESHOT_BYTES (here 2048), at count 0, with the setting at
// 0, and when COLL_ALGO names an allreduce algorithm, the plan runs, exact.
TEST(OneshotLimits, ThePlanRunsOutsideThem) {
  for (const char* algo : {"", "allreduce:ring"}) {
    for (const char* limit : {"2048", "0"}) {
      run_ranks_with_comm(
          3,
          [&](coll_comm_t comm, int rank, int n) {
            const bool named = std::string(algo).empty() == false, off = std::string(limit) == "0";
            EXPECT_TRUE(private_case(comm, rank, n, COLL_INT32, COLL_SUM, 512, false));  // 2048 bytes
            EXPECT_EQ(last_algorithm(comm) == "board_allreduce", !named && !off) << algo << " " << limit;
            EXPECT_TRUE(private_case(comm, rank, n, COLL_INT8, COLL_SUM, 2049, false));
            EXPECT_NE(last_algorithm(comm), "board_allreduce");
            EXPECT_TRUE(private_case(comm, rank, n, COLL_INT32, COLL_SUM, 0, true));
            EXPECT_NE(last_algorithm(comm), "board_allreduce");
          },
          RankOptions{.env = {{"COLL_ALGO", algo}, {"COLL_SHM_ONESHOT_BYTES", limit}}});
    }
  }
}

// Ranks that call different operations, or disagree on the setting so that
// one runs the plan where the others wait on the board: every rank fails
// with COLL_INVALID_USAGE, naming the difference where the two calls say it,
// within 2 s (the timeout is a minute), and the next call is refused.
struct Disagreement {
  const char* name;
  const char* words;  // in every rank's message
  std::function<coll_result_t(int rank, coll_comm_t comm, std::vector<float>& v)> call;
};

TEST(OneshotDisagree, EveryRankFailsAtOnce) {
  const std::vector<Disagreement> cases = {
      {"count", "count",
       [](int rank, coll_comm_t comm, std::vector<float>& v) {
         return coll_allreduce(v.data(), v.data(), rank == 1 ? 3 : 2, COLL_FLOAT32, COLL_SUM, comm, nullptr);
       }},
      {"op", "op ",
       [](int rank, coll_comm_t comm, std::vector<float>& v) {
         return coll_allreduce(v.data(), v.data(), 2, COLL_FLOAT32, rank == 1 ? COLL_MAX : COLL_SUM, comm, nullptr);
       }},
      {"collective", "called a different operation",
       [](int rank, coll_comm_t comm, std::vector<float>& v) {
         if (rank == 1) return coll_broadcast(v.data(), 2, COLL_FLOAT32, 1, comm, nullptr);
         return coll_allreduce(v.data(), v.data(), 2, COLL_FLOAT32, COLL_SUM, comm, nullptr);
       }},
      {"receiver", "called a different operation",  // rank 1 only waits for a message, which never comes
       [](int rank, coll_comm_t comm, std::vector<float>& v) {
         if (rank == 1) return coll_broadcast(v.data(), 2, COLL_FLOAT32, 0, comm, nullptr);
         return coll_allreduce(v.data(), v.data(), 2, COLL_FLOAT32, COLL_SUM, comm, nullptr);
       }},
      {"setting", "COLL_SHM_ONESHOT_BYTES",
       [](int, coll_comm_t comm, std::vector<float>& v) {  // rank 1 has COLL_SHM_ONESHOT_BYTES=0 (below)
         return coll_allreduce(v.data(), v.data(), 2, COLL_FLOAT32, COLL_SUM, comm, nullptr);
       }},
  };
  for (const Disagreement& c : cases) {
    for (int nranks : {2, 3}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::to_string(nranks) + " ranks");
      const bool setting = std::string(c.name) == "setting";
      run_ranks(
          nranks,
          [&](int rank, int n, const coll_unique_id_t& id) {
            if (setting && rank == 1) setenv("COLL_SHM_ONESHOT_BYTES", "0", 1);
            coll_comm_t comm = init_or_die(rank, n, id);
            ASSERT_NE(comm, nullptr);
            std::vector<float> v(8, 1.0f);
            const auto start = Clock::now();
            coll_result_t r = c.call(rank, comm, v);
            if (r == COLL_SUCCESS) r = coll_barrier(comm);  // a root that only sent
            const std::string message = coll_get_last_error(comm);
            const double s = std::chrono::duration<double>(Clock::now() - start).count();
            EXPECT_EQ(r, COLL_INVALID_USAGE) << message;
            EXPECT_NE(message.find(c.words), std::string::npos) << message;
            EXPECT_LT(s, 2.0) << message;
            std::printf("%s, %d ranks, rank %d after %.3f s: %s\n", c.name, n, rank, s, message.c_str());
            EXPECT_EQ(coll_allreduce(v.data(), v.data(), 2, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_INVALID_USAGE);
            coll_comm_destroy(comm);
          },
          RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "60000"}}});
    }
  }
}

// Rank 0 waits on the board for rank 1, which comes only once rank 0 is
// done; another thread of rank 0 aborts. The wait ends within 100 ms of the
// abort; rank 1 then finds rank 0 gone, and why, instead of waiting for its
// timeout.
TEST(OneshotAbort, EndsTheWaitOnTheBoard) {
  Handshake aborted;
  run_ranks_with_comm(
      2,
      [&aborted](coll_comm_t comm, int rank, int) {
        std::vector<float> v(2, 1.0f);
        ASSERT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        ASSERT_EQ(last_algorithm(comm), "board_allreduce");
        if (rank == 0) {
          Clock::time_point aborted_at{};
          std::thread aborter([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            aborted_at = Clock::now();
            EXPECT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
          });
          const coll_result_t r = coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
          const auto returned_at = Clock::now();
          aborter.join();
          const double ms = std::chrono::duration<double, std::milli>(returned_at - aborted_at).count();
          EXPECT_EQ(r, COLL_INVALID_USAGE) << coll_get_last_error(comm);
          EXPECT_NE(std::string(coll_get_last_error(comm)).find("aborted"), std::string::npos)
              << coll_get_last_error(comm);
          EXPECT_LE(ms, 100.0) << "the allreduce ended " << ms << " ms after the abort";
          aborted.arrive();
        } else {
          ASSERT_TRUE(aborted.wait_for(1)) << "rank 0 never finished its aborted allreduce";
          const auto start = Clock::now();
          // Rank 0 posted its block for the call it aborted: that one completes here.
          coll_result_t r = COLL_SUCCESS;
          for (int i = 0; i < 3 && r == COLL_SUCCESS; ++i)
            r = coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
          EXPECT_EQ(r, COLL_REMOTE_ERROR) << coll_get_last_error(comm);
          EXPECT_NE(std::string(coll_get_last_error(comm)).find("rank 0 ("), std::string::npos)
              << coll_get_last_error(comm);
          const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
          EXPECT_LT(ms, 1000.0);
        }
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "60000"}}}, Destroy::kAnyResult);
}

// Non-blocking one-shot allreduces, several in flight (they run in order on
// the worker), each exact.
TEST(OneshotAsync, SeveralInFlight) {
  run_ranks_with_comm(4, [](coll_comm_t comm, int rank, int n) {
    std::vector<std::vector<int64_t>> in(16), out(16);
    std::vector<coll_request_t> requests(16);
    for (size_t i = 0; i < in.size(); ++i) {
      in[i].assign(i + 1, static_cast<int64_t>(rank + 1) * static_cast<int64_t>(i + 1));
      out[i].assign(i + 1, -1);
      ASSERT_EQ(
          coll_allreduce_async(in[i].data(), out[i].data(), i + 1, COLL_INT64, COLL_SUM, comm, nullptr, &requests[i]),
          COLL_SUCCESS);
    }
    const int64_t ranks_sum = static_cast<int64_t>(n) * (n + 1) / 2;
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(coll_wait(requests[i]), COLL_SUCCESS) << coll_get_last_error(comm);
      for (int64_t x : out[i]) ASSERT_EQ(x, ranks_sum * static_cast<int64_t>(i + 1)) << "request " << i;
    }
    EXPECT_EQ(last_algorithm(comm), "board_allreduce");
  });
}

// One-shot rounds between the plan's operations, and on a communicator
// split off, in a random order all ranks share, each rank sleeping a random
// while before each call, so that a fast rank posts its next round while a
// slow one still reads the last. Exact every time.
TEST(OneshotMixed, WithThePlanUnderSkew) {
  run_ranks_with_comm(
      4,
      [](coll_comm_t comm, int rank, int n) {
        coll_comm_t half = nullptr;
        ASSERT_EQ(coll_comm_split(comm, rank % 2, rank, &half), COLL_SUCCESS) << coll_get_last_error(comm);
        std::mt19937 order(11), skew(static_cast<unsigned>(rank) + 200);
        int oneshots = 0;
        for (int i = 0; i < 300 && !::testing::Test::HasFailure(); ++i) {
          const int kind = static_cast<int>(order() % 4);
          const bool in_place = order() % 2 == 0;
          const size_t count = 1 + order() % 500;
          if (skew() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(skew() % 300));
          if (kind == 0) EXPECT_TRUE(private_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, count, in_place));
          if (kind == 1) EXPECT_TRUE(private_case(comm, rank, n, COLL_INT32, COLL_MAX, 600 + count, in_place));
          if (kind == 2)
            EXPECT_TRUE(private_case(half, rank / 2, n / 2, COLL_FLOAT64, COLL_AVG, count / 2 + 1, in_place));
          if (kind == 3) EXPECT_EQ(coll_barrier(comm), COLL_SUCCESS);
          oneshots += kind == 0 && last_algorithm(comm) == "board_allreduce";
        }
        EXPECT_GT(oneshots, 50) << "rank " << rank;
        EXPECT_EQ(coll_comm_destroy(half), COLL_SUCCESS);
      },
      RankOptions{.limit_s = 120});
}

// One-shot allreduces between point-to-point messages of every kind the
// shm transport has (inline, through the slots, read with process_vm_readv
// from 256 KiB: COLL_SHM_SINGLE_COPY=1), and inside groups whose other
// operations differ from rank to rank: ranks 0 and 1 group the allreduce
// with an exchange between them, ranks 2 and 3 group it alone. A group's
// allreduce runs its plan on every rank; everything exact, nothing taken
// for a mismatch.
TEST(OneshotMixed, WithPointToPointAndGroups) {
  run_ranks_with_comm(
      4,
      [](coll_comm_t comm, int rank, int n) {
        const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
        std::mt19937 skew(static_cast<unsigned>(rank) + 300);
        for (int i = 0; i < 30 && !::testing::Test::HasFailure(); ++i) {
          for (size_t count : {size_t{2}, size_t{16} << 10, size_t{80} << 10}) {  // 8 B, 64 KiB, 320 KiB of int32
            std::vector<int32_t> out(count, rank * 1000 + i), in(count, -1);
            if (skew() % 3 == 0) std::this_thread::sleep_for(std::chrono::microseconds(skew() % 200));
            ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
            ASSERT_EQ(coll_send(out.data(), count, COLL_INT32, next, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(coll_recv(in.data(), count, COLL_INT32, prev, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
            ASSERT_EQ(in.front(), prev * 1000 + i);
            ASSERT_EQ(in.back(), prev * 1000 + i);
            ASSERT_TRUE(private_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, 1 + i, i % 2 == 0));
            ASSERT_EQ(last_algorithm(comm), "board_allreduce");
          }
          // The group: its allreduce runs the plan on every rank.
          std::vector<int64_t> mine(3, rank + 1), sum(3, 0), peer(5, -1), to_peer(5, rank);
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          ASSERT_EQ(coll_allreduce(mine.data(), sum.data(), 3, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
          if (rank < 2) {
            ASSERT_EQ(coll_send(to_peer.data(), 5, COLL_INT64, 1 - rank, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(coll_recv(peer.data(), 5, COLL_INT64, 1 - rank, comm, nullptr), COLL_SUCCESS);
          }
          ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
          ASSERT_NE(last_algorithm(comm), "board_allreduce");
          for (int64_t x : sum) ASSERT_EQ(x, int64_t{n} * (n + 1) / 2);
          if (rank < 2) ASSERT_EQ(peer[4], 1 - rank);
        }
      },
      RankOptions{.limit_s = 120, .env = {{"COLL_SHM_SINGLE_COPY", "1"}}});
}

}  // namespace
}  // namespace coll::testing
