// When things go wrong, with real processes: per-communicator timeouts,
// abort from another thread, the asynchronous error, and what every rank
// learns when one of them dies.
#include "support/multirank.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string last_error(coll_comm_t comm) { return coll_get_last_error(comm); }

TEST(Config, TheConfigTimeoutWinsOverTheEnvironment) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = nullptr;
        coll_config_t config = COLL_CONFIG_INIT;
        config.timeout_ms = 300;
        ASSERT_EQ(coll_comm_init_rank_config(&comm, n, id, rank, &config), COLL_SUCCESS)
            << coll_get_last_error(nullptr);
        float x = 1;
        if (rank == 0) {  // rank 1 never joins this allreduce
          auto start = Clock::now();
          EXPECT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_TIMEOUT);
          EXPECT_LT(ms_since(start), 3000) << "the environment's 60 s applied, not the config's 300 ms";
          EXPECT_NE(last_error(comm).find("allreduce #1"), std::string::npos) << last_error(comm);
          EXPECT_NE(last_error(comm).find("after 300 ms"), std::string::npos) << last_error(comm);
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        }
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "60000"}}});
}

TEST(Config, AMalformedConfigIsAnInvalidArgument) {
  run_ranks(1, [](int rank, int n, const coll_unique_id_t& id) {
    coll_comm_t comm = nullptr;
    coll_config_t config = COLL_CONFIG_INIT;
    config.size = 3;
    EXPECT_EQ(coll_comm_init_rank_config(&comm, n, id, rank, &config), COLL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("COLL_CONFIG_INIT"), std::string::npos);
    config = COLL_CONFIG_INIT;
    config.timeout_ms = -1;
    EXPECT_EQ(coll_comm_init_rank_config(&comm, n, id, rank, &config), COLL_INVALID_ARGUMENT);
    EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("timeout_ms -1"), std::string::npos);
    ASSERT_EQ(coll_comm_init_rank_config(&comm, n, id, rank, nullptr), COLL_SUCCESS);  // defaults
    coll_comm_destroy(comm);
  });
}

// Rank 0 waits in an allreduce that rank 1 joins late; another thread of
// rank 0 aborts. The allreduce ends within 100 ms of the abort, the
// asynchronous error stays clear (an abort is the caller's own doing), and
// rank 1 then finds rank 0 gone instead of waiting for its timeout.
TEST(Abort, FromAnotherThreadEndsTheWaitWithin100Ms) {
  for (const char* transports : {"tcp", "shm"}) {
    SCOPED_TRACE(transports);
    run_ranks(
        2,
        [](int rank, int n, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, n, id);
          ASSERT_NE(comm, nullptr);
          std::vector<float> v(1 << 16, 1.0f);
          ASSERT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
          if (rank == 0) {
            Clock::time_point aborted_at{};
            std::thread aborter([&] {
              std::this_thread::sleep_for(std::chrono::milliseconds(300));
              aborted_at = Clock::now();
              EXPECT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
            });
            coll_result_t r = coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
            const auto returned_at = Clock::now();
            aborter.join();
            const double ms = std::chrono::duration<double, std::milli>(returned_at - aborted_at).count();
            EXPECT_EQ(r, COLL_INVALID_USAGE) << last_error(comm);
            EXPECT_NE(last_error(comm).find("aborted"), std::string::npos) << last_error(comm);
            EXPECT_LE(ms, 100.0) << "the allreduce ended " << ms << " ms after the abort";
            std::printf("rank 0: allreduce returned %.1f ms after coll_comm_abort\n", ms);
            EXPECT_EQ(coll_allreduce(v.data(), v.data(), 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_INVALID_USAGE);
          } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(800));
            auto start = Clock::now();
            coll_result_t r = coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
            EXPECT_EQ(r, COLL_REMOTE_ERROR) << last_error(comm);
            EXPECT_LT(ms_since(start), 5000) << last_error(comm);
            coll_result_t async = COLL_SUCCESS;
            EXPECT_EQ(coll_comm_get_async_error(comm, &async), COLL_SUCCESS);
            EXPECT_EQ(async, COLL_REMOTE_ERROR);
          }
          coll_comm_destroy(comm);
        },
        RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "60000"}, {"COLL_TRANSPORTS", transports}}});
  }
}

// Queued non-blocking operations end too, and a watchdog thread sees the
// asynchronous error without waiting.
TEST(AsyncError, AWatchdogSeesTheFirstFailure) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        coll_result_t async = COLL_INTERNAL_ERROR;
        EXPECT_EQ(coll_comm_get_async_error(comm, &async), COLL_SUCCESS);
        EXPECT_EQ(async, COLL_SUCCESS);
        EXPECT_EQ(coll_comm_get_async_error(comm, nullptr), COLL_INVALID_ARGUMENT);
        float x = 1, y = 2;
        if (rank == 1) {  // leaves without a word: rank 0's queued operations fail
          coll_comm_destroy(comm);
          return;
        }
        coll_request_t a = nullptr, b = nullptr;
        ASSERT_EQ(coll_allreduce_async(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr, &a), COLL_SUCCESS);
        ASSERT_EQ(coll_allreduce_async(&y, &y, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr, &b), COLL_SUCCESS);
        auto start = Clock::now();
        while (coll_comm_get_async_error(comm, &async) == COLL_SUCCESS && async == COLL_SUCCESS &&
               ms_since(start) < 10000)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        EXPECT_EQ(async, COLL_REMOTE_ERROR) << last_error(comm);
        EXPECT_NE(last_error(comm).find("rank 1"), std::string::npos) << last_error(comm);
        EXPECT_EQ(coll_wait(a), COLL_REMOTE_ERROR);
        EXPECT_EQ(coll_wait(b), COLL_INVALID_USAGE);  // refused: the first one failed
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "60000"}}});
}

}  // namespace
}  // namespace coll::testing
