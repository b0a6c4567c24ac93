// kill -9 at a random moment, over shm and over tcp: during an allreduce,
// during an agreement, during a shrink. The victim's own thread kills it
// 0 to 40 ms into the phase. Every survivor must then either recover (a
// communicator of exactly the live ranks, with an exact sum) or return an
// error that names its cause; none may wait past the timeout (the harness
// kills a rank still running at its limit and fails the test), and no
// shared-memory segment of the job may be left.
#include "support/clock.h"
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace coll::testing {
namespace {

constexpr int kRanks = 4, kVictim = 2;

// Kills this process `ms` from now, from a thread of its own.
void die_in(int ms) {
  std::thread([ms] {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    raise(SIGKILL);
  }).detach();
}

// Whether `comm` holds exactly `live` ranks that sum exactly.
bool sums_over(coll_comm_t comm, int live) {
  int size = 0;
  coll_comm_size(comm, &size);
  int64_t one = 1;
  return size == live && coll_allreduce(&one, &one, 1, COLL_INT64, COLL_SUM, comm, nullptr) == COLL_SUCCESS &&
         one == live;
}

// A survivor's recovery: shrink until the communicator holds the live ranks
// and sums exactly (a shrink may still include a victim dying meanwhile), at
// most three times. Every failure on the way must name its cause.
void recover(coll_comm_t comm, int rank) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (sums_over(comm, kRanks - 1)) {
      std::printf("rank %d: recovered after %d shrink(s)\n", rank, attempt);
      coll_comm_destroy(comm);
      return;
    }
    coll_comm_t survivors = nullptr;
    const coll_result_t r = coll_comm_shrink(comm, nullptr, 0, &survivors);
    const std::string why = last_error(comm);
    coll_comm_destroy(comm);
    if (r != COLL_SUCCESS) {
      EXPECT_FALSE(why.empty()) << "rank " << rank << ": shrink failed without saying why";
      std::printf("rank %d: shrink failed: %s\n", rank, why.c_str());
      return;
    }
    comm = survivors;
  }
  coll_comm_destroy(comm);
  ADD_FAILURE() << "rank " << rank << ": no communicator of the live ranks after three shrinks";
}

// A failed call must say why; `what` names the phase for the message.
void expect_named(coll_result_t r, coll_comm_t comm, int rank, const char* what) {
  if (r != COLL_SUCCESS)
    EXPECT_FALSE(last_error(comm).empty()) << "rank " << rank << ": " << what << " failed silently";
}

using Param = std::tuple<std::string, std::string>;  // phase, transports
class KillAnytime : public ::testing::TestWithParam<Param> {};

TEST_P(KillAnytime, SurvivorsRecoverOrNameTheCause) {
  // Plain names, not a structured binding: clang 14 cannot capture one in a lambda.
  const std::string phase = std::get<0>(GetParam()), transports = std::get<1>(GetParam());
  std::mt19937 random(static_cast<unsigned>(std::hash<std::string>{}(phase + transports)));
  for (int trial = 0; trial < 3; ++trial) {
    const int delay_ms = static_cast<int>(random() % 41);
    // The job's id, written by rank 0 where the test process reads it after.
    auto* job = static_cast<coll_unique_id_t*>(
        mmap(nullptr, sizeof(coll_unique_id_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(job, MAP_FAILED);
    run_ranks(
        kRanks,
        [&](int rank, int n, const coll_unique_id_t& id) {
          if (rank == 0) *job = id;
          coll_comm_t comm = init_or_die(rank, n, id);
          ASSERT_NE(comm, nullptr);
          ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
          if (rank == kVictim) die_in(delay_ms);
          if (phase == "allreduce") {
            std::vector<float> v(1 << 18, 1.0f);
            for (int i = 0; i < 50; ++i) {
              const coll_result_t r =
                  coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
              expect_named(r, comm, rank, "allreduce");
              if (r != COLL_SUCCESS) break;
            }
          } else if (phase == "agree") {
            for (int i = 0; i < 50; ++i) {
              int flag = 1;
              const coll_result_t r = coll_comm_agree(comm, &flag, nullptr, nullptr);
              expect_named(r, comm, rank, "agree");
              if (r != COLL_SUCCESS) break;
              EXPECT_EQ(flag, 1);
            }
          } else {  // shrink: every rank shrinks at once, the victim dying meanwhile
            coll_comm_t survivors = nullptr;
            const coll_result_t r = coll_comm_shrink(comm, nullptr, 0, &survivors);
            expect_named(r, comm, rank, "shrink");
            if (r == COLL_SUCCESS) {
              coll_comm_destroy(comm);
              comm = survivors;
            }
          }
          if (rank == kVictim) std::this_thread::sleep_for(std::chrono::seconds(60));  // dies meanwhile
          recover(comm, rank);
        },
        RankOptions{.limit_s = 60,
                    .env = {{"COLL_TIMEOUT_MS", "5000"}, {"COLL_TRANSPORTS", transports}},
                    .killed_rank = kVictim});
    expect_no_segments_left(*job);
    munmap(job, sizeof(coll_unique_id_t));
    if (HasFailure()) {
      ADD_FAILURE() << "trial " << trial << ": the victim died " << delay_ms << " ms into the " << phase;
      return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Phases, KillAnytime,
                         ::testing::Combine(::testing::Values("allreduce", "agree", "shrink"),
                                            ::testing::Values("shm", "tcp")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace coll::testing
