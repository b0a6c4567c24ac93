// Every kind of call honours the communicator's timeout, and abort ends
// non-blocking operations too, with real processes: rank 1 joins each
// communicator and then leaves rank 0 waiting. And a slow reader is not a
// dead one.
#include "support/clock.h"
#include "support/handshake.h"
#include "support/multirank.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

coll_comm_t init_with_timeout(int rank, int n, const coll_unique_id_t& id, int timeout_ms) {
  coll_config_t config = COLL_CONFIG_INIT;
  config.timeout_ms = timeout_ms;
  coll_comm_t comm = nullptr;
  EXPECT_EQ(coll_comm_init_rank_config(&comm, n, id, rank, &config), COLL_SUCCESS) << coll_get_last_error(nullptr);
  return comm;
}

// One call that rank 1 never answers; returns its result.
struct Case {
  const char* name;
  std::function<coll_result_t(coll_comm_t, float*)> call;
};

std::vector<Case> unanswered_calls() {
  return {
      {"barrier", [](coll_comm_t c, float*) { return coll_barrier(c); }},
      {"broadcast", [](coll_comm_t c, float* v) { return coll_broadcast(v, 1000, COLL_FLOAT32, 1, c, nullptr); }},
      {"recv", [](coll_comm_t c, float* v) { return coll_recv(v, 1000, COLL_FLOAT32, 1, c, nullptr); }},
      {"alltoall", [](coll_comm_t c, float* v) { return coll_alltoall(v, v + 2000, 1000, COLL_FLOAT32, c, nullptr); }},
      {"coll_wait on allreduce_async",
       [](coll_comm_t c, float* v) {
         coll_request_t request = nullptr;
         coll_result_t r = coll_allreduce_async(v, v, 1000, COLL_FLOAT32, COLL_SUM, c, nullptr, &request);
         return r != COLL_SUCCESS ? r : coll_wait(request);
       }},
      {"group of send and recv",
       [](coll_comm_t c, float* v) {
         coll_group_start();
         coll_send(v, 1000, COLL_FLOAT32, 1, c, nullptr);
         coll_recv(v + 1000, 1000, COLL_FLOAT32, 1, c, nullptr);
         return coll_group_end();
       }},
  };
}

// Each case in its own job with a 1 s timeout: rank 0's call must be
// COLL_TIMEOUT, saying so, between 1 s and 3 s; rank 1 joins the
// communicator, then stays away until rank 0 says it is done. (The timeout
// bounds the communicator's init too, so it must leave room for a rank
// that a loaded machine starts late.)
TEST(Timeout, EveryKindOfCallHonoursIt) {
  constexpr int kTimeoutMs = 1000;
  for (const Case& c : unanswered_calls()) {
    SCOPED_TRACE(c.name);
    Handshake done;
    run_ranks(
        2,
        [&c, &done](int rank, int n, const coll_unique_id_t& id) {
          coll_comm_t comm = init_with_timeout(rank, n, id, kTimeoutMs);
          ASSERT_NE(comm, nullptr);
          if (rank == 1) {
            EXPECT_TRUE(done.wait_for(1)) << "rank 0 never finished its call";
          } else {
            std::vector<float> v(4000, 1.0f);
            const auto start = Clock::now();
            const coll_result_t r = c.call(comm, v.data());
            const double ms = ms_since(start);
            const std::string message = coll_get_last_error(comm);
            EXPECT_EQ(r, COLL_TIMEOUT) << message;
            EXPECT_NE(message.find("timed out after 1000 ms"), std::string::npos) << message;
            EXPECT_GE(ms, kTimeoutMs - 1.0) << message;
            EXPECT_LT(ms, kTimeoutMs + 2000.0) << message;
            std::printf("%s: COLL_TIMEOUT after %.0f ms\n", c.name, ms);
            done.arrive();
          }
          EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
        },
        RankOptions{.limit_s = 30});
  }
}

// Abort from another thread ends an in-flight non-blocking operation and
// the one queued behind it: coll_wait, blocked on the first when the abort
// comes, returns COLL_INVALID_USAGE for both within 100 ms of it.
TEST(Abort, EndsNonBlockingOperationsInFlightAndQueued) {
  Handshake done;
  run_ranks(
      2,
      [&done](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_with_timeout(rank, n, id, 60000);
        ASSERT_NE(comm, nullptr);
        if (rank == 0) {
          std::vector<float> a(1 << 16, 1.0f), b(1 << 16, 2.0f);
          coll_request_t first = nullptr, second = nullptr;
          ASSERT_EQ(coll_allreduce_async(a.data(), a.data(), a.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr, &first),
                    COLL_SUCCESS);
          ASSERT_EQ(coll_allreduce_async(b.data(), b.data(), b.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr, &second),
                    COLL_SUCCESS);
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          EXPECT_EQ(coll_test(first), COLL_IN_PROGRESS);
          Clock::time_point aborted_at{};
          std::thread aborter([&] {  // while this thread waits on the first
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            aborted_at = Clock::now();
            EXPECT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
          });
          EXPECT_EQ(coll_wait(first), COLL_INVALID_USAGE) << coll_get_last_error(comm);
          EXPECT_EQ(coll_wait(second), COLL_INVALID_USAGE) << coll_get_last_error(comm);
          const Clock::time_point ended = Clock::now();
          aborter.join();
          const double ms = std::chrono::duration<double, std::milli>(ended - aborted_at).count();
          EXPECT_LE(ms, 100.0) << "the operations ended " << ms << " ms after the abort";
          std::printf("rank 0: both requests ended %.1f ms after coll_comm_abort\n", ms);
          done.arrive();
        } else {
          EXPECT_TRUE(done.wait_for(1)) << "rank 0 never finished";  // never joins
        }
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 60});
}

// COLL_TCP_SILENCE_MS takes a peer whose kernel acknowledges nothing for
// 2 s as gone; a peer that is alive but reads nothing for 5 s is not that:
// its kernel acknowledges what it holds and closes its window. Rank 0's
// 64 MiB send waits, then completes exactly. (A silent node is the
// emulated cluster's test: ctest -L netns.)
TEST(Silence, ASlowReaderIsNotTakenForDead) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_with_timeout(rank, n, id, 60000);
        ASSERT_NE(comm, nullptr);
        std::vector<int32_t> v(16 << 20);
        if (rank == 0) {
          for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 7);
          const auto start = Clock::now();
          EXPECT_EQ(coll_send(v.data(), v.size(), COLL_INT32, 1, comm, nullptr), COLL_SUCCESS)
              << coll_get_last_error(comm);
          std::printf("rank 0: the send waited %.0f ms for its slow reader\n", ms_since(start));
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(5000));
          EXPECT_EQ(coll_recv(v.data(), v.size(), COLL_INT32, 0, comm, nullptr), COLL_SUCCESS)
              << coll_get_last_error(comm);
          for (size_t i = 0; i < v.size(); i += 4099) ASSERT_EQ(v[i], static_cast<int32_t>(i * 7));
        }
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TRANSPORTS", "tcp"}, {"COLL_TCP_SILENCE_MS", "2000"}}});
}

// Shorter than a few retransmissions, a silence would take a lost packet
// for a dead node: refused at init, naming the setting.
TEST(Silence, ASettingUnder2sIsRefused) {
  run_ranks(
      1,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = nullptr;
        EXPECT_EQ(coll_comm_init_rank(&comm, n, id, rank), COLL_INVALID_ARGUMENT);
        const std::string message = coll_get_last_error(nullptr);
        EXPECT_NE(message.find("COLL_TCP_SILENCE_MS=500"), std::string::npos) << message;
      },
      RankOptions{.limit_s = 30, .env = {{"COLL_TRANSPORTS", "tcp"}, {"COLL_TCP_SILENCE_MS", "500"}}});
}

}  // namespace
}  // namespace coll::testing
