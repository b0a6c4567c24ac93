// Fault injection and resources, with real processes: kill -9 of a random
// rank at a random moment, trial after trial, for each transport; and
// nothing (segments, descriptors, threads) left behind by a thousand
// communicators, by aborts, or on the survivors of a killed peer.
#include "support/last_algorithm.h"
#include "support/multirank.h"
#include "support/proc_self.h"
#include "support/shared_buffers.h"
#include "support/transports.h"

#include <fcntl.h>
#include <poll.h>

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Reads exactly `bytes` from a pipe, or gives up after 30 s (the writer failed).
bool read_within(int fd, void* into, size_t bytes) {
  size_t got = 0;
  for (auto end = Clock::now() + std::chrono::seconds(30); got < bytes && Clock::now() < end;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = read(fd, static_cast<char*>(into) + got, bytes - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return got == bytes;
}

// What every surviving rank of a trial reports through a pipe to the parent.
struct Outcome {
  int rank;
  int result;
  double failing_call_ms;
  int leaked_fds, leaked_threads;
};

// Twenty trials per transport: 4 ranks loop over allreduces of varied
// sizes; one rank, chosen at random, is killed by SIGKILL at a random moment
// (a thread in it raises the signal, mid-operation or between two). Every
// survivor must return an error within COLL_TIMEOUT_MS + 2 s of entering its
// failing call, and hold no more descriptors or threads after
// coll_comm_destroy than before coll_comm_init_rank.
class KillNine : public ::testing::TestWithParam<std::string> {};

TEST_P(KillNine, EverySurvivorFailsInTimeAndLeaksNothing) {
  constexpr int kRanks = 4, kTimeoutMs = 3000;
  // Fewer where the machine is slow (tests/rxe: a guest under emulation).
  const int kTrials = std::getenv("COLLTEST_KILL_TRIALS") ? std::atoi(std::getenv("COLLTEST_KILL_TRIALS")) : 20;
  std::mt19937 rng(20261130);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  std::vector<Outcome> all;
  // "shm_direct": buffers from coll_mem_alloc, so that the larger allreduces
  // take the direct-access path (each rank writes into its peers' buffers)
  // when the victim dies; "shm_staged": private buffers, and the larger
  // allreduces take its staged form; "shm_oneshot": the two smaller ones
  // (4 and 4000 bytes) run one-shot.
  const bool direct = GetParam() == "shm_direct";
  auto env = transport_env(GetParam());
  env["COLL_TIMEOUT_MS"] = std::to_string(kTimeoutMs);
  for (int trial = 0; trial < kTrials; ++trial) {
    const int victim = std::uniform_int_distribution<int>(0, kRanks - 1)(rng);
    const int after_ms = std::uniform_int_distribution<int>(0, 400)(rng);
    run_ranks(
        kRanks,
        [&](int rank, int n, const coll_unique_id_t& id) {
          const int fds_before = open_fds(), threads_before = threads();
          coll_comm_t comm = init_or_die(rank, n, id);
          ASSERT_NE(comm, nullptr);
          std::vector<float> private_v(direct ? 0 : 1 << 18, 1.0f);
          float* v = private_v.data();
          if (direct) ASSERT_EQ(coll_mem_alloc(reinterpret_cast<void**>(&v), (1 << 18) * sizeof(float)), COLL_SUCCESS);
          if (GetParam() == "shm_staged") {  // proof that the staged form runs, before anyone dies
            ASSERT_EQ(coll_allreduce(v, v, 1 << 18, COLL_FLOAT32, COLL_MAX, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(staging_mappings(), n) << "rank " << rank << ": the staged form did not run";
          }
          if (direct) {  // proof that the direct-access form runs (it maps the peers' buffers), before anyone dies
            const int own = coll_mem_mappings("rw");
            ASSERT_EQ(coll_allreduce(v, v, 1 << 18, COLL_FLOAT32, COLL_MAX, comm, nullptr), COLL_SUCCESS);
            ASSERT_GT(coll_mem_mappings("rw"), own) << "rank " << rank << ": the direct-access form did not run";
          }
          if (GetParam() == "shm_oneshot") {
            ASSERT_EQ(coll_allreduce(v, v, 1000, COLL_FLOAT32, COLL_MAX, comm, nullptr), COLL_SUCCESS);
            ASSERT_EQ(last_algorithm(comm), "board_allreduce") << "rank " << rank;
          }
          if (rank == victim)
            std::thread([after_ms] {
              std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
              raise(SIGKILL);
            }).detach();
          const size_t sizes[] = {1, 1000, 1 << 14, 1 << 18};
          coll_result_t r = COLL_SUCCESS;
          double ms = 0;
          for (int i = 0; r == COLL_SUCCESS && i < 1000000; ++i) {
            auto start = Clock::now();
            r = coll_allreduce(v, v, sizes[i % 4], COLL_FLOAT32, COLL_MAX, comm, nullptr);
            ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
          }
          EXPECT_TRUE(r == COLL_REMOTE_ERROR || r == COLL_TIMEOUT) << coll_get_last_error(comm);
          EXPECT_LE(ms, kTimeoutMs + 2000.0) << coll_get_last_error(comm);
          coll_comm_destroy(comm);
          if (direct) EXPECT_EQ(coll_mem_free(v), COLL_SUCCESS);
          // Rank 0 hosts the store, which was running before init and ends
          // now (the survivors said goodbye, the victim's connection closed).
          for (int i = 0; i < 300 && threads() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          Outcome o{rank, r, ms, open_fds() - fds_before, threads() - threads_before};
          EXPECT_LE(o.leaked_fds, 0) << "rank " << rank << ": descriptors left";
          EXPECT_EQ(threads(), 1) << "rank " << rank << ": threads left";
          ASSERT_EQ(write(pipefd[1], &o, sizeof(o)), static_cast<ssize_t>(sizeof(o)));
        },
        RankOptions{.limit_s = 60, .env = env, .killed_rank = victim});
    std::set<int> reported;
    for (int k = 0; k < kRanks - 1; ++k) {
      Outcome o{};
      ASSERT_TRUE(read_within(pipefd[0], &o, sizeof(o))) << "trial " << trial << ": a survivor reported nothing";
      EXPECT_NE(o.rank, victim) << "trial " << trial << ": the victim (rank " << victim << ") reported";
      EXPECT_TRUE(reported.insert(o.rank).second) << "trial " << trial << ": rank " << o.rank << " reported twice";
      all.push_back(o);
    }
  }
  close(pipefd[0]);
  close(pipefd[1]);
  int remote = 0, timeout = 0;
  double worst = 0;
  for (const Outcome& o : all) {
    remote += o.result == COLL_REMOTE_ERROR;
    timeout += o.result == COLL_TIMEOUT;
    worst = std::max(worst, o.failing_call_ms);
  }
  std::printf("%s: %d trials, %zu survivors: %d COLL_REMOTE_ERROR, %d COLL_TIMEOUT; slowest failing call %.0f ms\n",
              GetParam().c_str(), kTrials, all.size(), remote, timeout, worst);
}

// The conformance suite's transports (support/transport_link.h).
INSTANTIATE_TEST_SUITE_P(Transports, KillNine, ::testing::ValuesIn(kTransportsUnderTest),
                         [](const auto& info) { return std::string(info.param); });
INSTANTIATE_TEST_SUITE_P(DirectAccess, KillNine, ::testing::Values("shm_direct", "shm_staged", "shm_oneshot"),
                         [](const auto& info) { return std::string(info.param); });

// A thousand communicators created, used and destroyed, every tenth one
// aborted first: afterwards the process holds the descriptors and threads
// it held before, and /dev/shm holds nothing of any cycle's job.
TEST(Resources, AThousandCommunicatorsLeaveNothing) {
  constexpr int kCycles = 1000;
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  run_ranks(2, [&](int rank, int n, const coll_unique_id_t& first_id) {
    coll_comm_t warm = init_or_die(rank, n, first_id);  // loads what a process loads once (topology)
    ASSERT_NE(warm, nullptr);
    coll_comm_destroy(warm);
    // Rank 0's first store closes in its own time once both said goodbye.
    for (int i = 0; i < 500 && threads() > 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const int fds_before = open_fds(), threads_before = threads();
    std::vector<coll_unique_id_t> ids;
    for (int cycle = 0; cycle < kCycles; ++cycle) {
      coll_unique_id_t id;
      if (rank == 0) {
        ASSERT_EQ(coll_get_unique_id(&id), COLL_SUCCESS);
        ASSERT_EQ(write(pipefd[1], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
      } else {
        ASSERT_TRUE(read_within(pipefd[0], &id, sizeof(id))) << "no id from rank 0 for cycle " << cycle;
      }
      coll_comm_t comm = init_or_die(rank, n, id);
      ASSERT_NE(comm, nullptr) << "cycle " << cycle;
      float x = static_cast<float>(rank + 1);
      ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS)
          << "cycle " << cycle << ": " << coll_get_last_error(comm);
      ASSERT_EQ(x, 3.0f);
      if (cycle % 10 == 9) ASSERT_EQ(coll_comm_abort(comm), COLL_SUCCESS);
      ASSERT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      ids.push_back(id);
    }
    // The stores of the last ids may still be closing their last connections.
    for (int i = 0; i < 200 && (open_fds() != fds_before || threads() != threads_before); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(open_fds(), fds_before) << "rank " << rank << ": descriptors left after " << kCycles << " cycles";
    EXPECT_EQ(threads(), threads_before) << "rank " << rank << ": threads left after " << kCycles << " cycles";
    // The peer has left every cycle but the last (it joined the next one).
    if (rank == 0)
      for (int cycle = 0; cycle + 1 < kCycles; ++cycle) expect_no_segments_left(ids[static_cast<size_t>(cycle)]);
    std::printf("rank %d: %d cycles: %d descriptors and %d threads, as before\n", rank, kCycles, open_fds(), threads());
  });
  close(pipefd[0]);
  close(pipefd[1]);
}

}  // namespace
}  // namespace coll::testing
