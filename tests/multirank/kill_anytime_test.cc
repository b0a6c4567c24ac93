// kill -9 at a random moment, over shm and over tcp: during an allreduce,
// during a buddy copy (a ring of send/recv pairs), during an agreement,
// during a shrink, during a growth by a spare. The victim's own thread
// kills it 0 to 40 ms into the phase. Every survivor must then either
// recover (a communicator of exactly the live ranks, with an exact sum; after
// a growth, the spare in the dead rank's stead) or return an error that names
// its cause; none may wait past the timeout (the harness kills a rank still
// running at its limit and fails the test); no shared-memory segment of any
// communicator may be left (the harness checks), and each survivor ends
// with the descriptors it began with.
#include "support/clock.h"
#include "support/multirank.h"
#include "support/proc_self.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <system_error>
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

// The descriptors of stores and sockets that coll closes from its own
// threads go within a second or two of the last destroy.
void expect_descriptors_back(int before, int rank) {
  const auto start = Clock::now();
  while (open_fds() > before && ms_since(start) < 3000) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (open_fds() <= before) return;
  // Named for the message; coll's threads may still close one while it is listed, which leaves it out.
  std::string open;
  std::error_code gone;
  for (std::filesystem::directory_iterator it("/proc/self/fd", gone), end; !gone && it != end; it.increment(gone)) {
    std::error_code closed;
    const std::filesystem::path target = std::filesystem::read_symlink(it->path(), closed);
    if (!closed) open += " " + it->path().filename().string() + "->" + target.string();
  }
  EXPECT_LE(open_fds(), before) << "rank " << rank << ": descriptors left open:" << open;
}

// Whether every rank of `comm` is alive: an allreduce of ones sums to its size.
bool whole(coll_comm_t comm) {
  int size = 0;
  coll_comm_size(comm, &size);
  int64_t one = 1;
  return coll_allreduce(&one, &one, 1, COLL_INT64, COLL_SUM, comm, nullptr) == COLL_SUCCESS && one == size;
}

// A failed call must say why, and fail within the timeout (and the time
// a probe or a goodbye takes); `what` names the phase for the message.
constexpr double kTimeoutMs = 5000, kLateByMs = 2000;
void expect_named(coll_result_t r, coll_comm_t comm, int rank, const char* what, Clock::time_point began) {
  if (r == COLL_SUCCESS) return;
  EXPECT_FALSE(last_error(comm).empty()) << "rank " << rank << ": " << what << " failed silently";
  std::printf("rank %d: %s failed after %.0f ms: %s\n", rank, what, ms_since(began), last_error(comm).c_str());
  EXPECT_LT(ms_since(began), kTimeoutMs + kLateByMs) << "rank " << rank << ": " << what << " failed late";
}

// A survivor's recovery: shrink until every rank of the communicator is
// alive (a shrink may still include a victim dying meanwhile), at most three
// times. Every failure on the way must name its cause. Returns the
// communicator, or null after a failure, having destroyed `comm`.
coll_comm_t recover(coll_comm_t comm, int rank) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (whole(comm)) {
      std::printf("rank %d: recovered after %d shrink(s)\n", rank, attempt);
      return comm;
    }
    coll_comm_t survivors = nullptr;
    const auto began = Clock::now();
    const coll_result_t r = coll_comm_shrink(comm, nullptr, 0, &survivors);
    expect_named(r, comm, rank, "shrink", began);
    coll_comm_destroy(comm);
    if (r != COLL_SUCCESS) return nullptr;
    comm = survivors;
  }
  coll_comm_destroy(comm);
  ADD_FAILURE() << "rank " << rank << ": no communicator of the live ranks after three shrinks";
  return nullptr;
}

// The phase, on every member; the victim dies meanwhile. Returns the
// communicator to recover (a grown one, when the growth succeeded).
coll_comm_t run_phase(const std::string& phase, coll_comm_t comm, int rank) {
  if (phase == "allreduce") {
    std::vector<float> v(1 << 18, 1.0f);
    for (int i = 0; i < 50; ++i) {
      const auto began = Clock::now();
      const coll_result_t r = coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
      expect_named(r, comm, rank, "allreduce", began);
      if (r != COLL_SUCCESS) break;
    }
  } else if (phase == "buddy") {  // each rank copies its shard to its right neighbour
    const int left = (rank + kRanks - 1) % kRanks, right = (rank + 1) % kRanks;
    std::vector<int32_t> shard(1 << 18, rank), copy(1 << 18, -1);
    for (int i = 0; i < 50; ++i) {
      const auto began = Clock::now();
      coll_group_start();
      coll_send(shard.data(), shard.size(), COLL_INT32, right, comm, nullptr);
      coll_recv(copy.data(), copy.size(), COLL_INT32, left, comm, nullptr);
      const coll_result_t r = coll_group_end();
      expect_named(r, comm, rank, "buddy copy", began);
      if (r != COLL_SUCCESS) break;
      EXPECT_EQ(copy.back(), left);
    }
  } else if (phase == "agree") {
    for (int i = 0; i < 50; ++i) {
      int flag = 1;
      const auto began = Clock::now();
      const coll_result_t r = coll_comm_agree(comm, &flag, nullptr, nullptr);
      expect_named(r, comm, rank, "agree", began);
      if (r != COLL_SUCCESS) break;
      EXPECT_EQ(flag, 1);
    }
  } else {  // shrink or grow: every rank at once, the victim dying meanwhile
    coll_comm_t next = nullptr;
    const auto began = Clock::now();
    const coll_result_t r =
        phase == "shrink" ? coll_comm_shrink(comm, nullptr, 0, &next) : coll_comm_grow(comm, 1, nullptr, &next);
    expect_named(r, comm, rank, phase.c_str(), began);
    if (r == COLL_SUCCESS) {
      coll_comm_destroy(comm);
      return next;
    }
  }
  return comm;
}

// The grow phase's spare (process kRanks): it joins the first growth, or
// the survivors' second one after a first that failed. Waiting is what a
// spare does; one that no growth seats within 30 s ends, as a launcher
// ends an unseated spare.
void spare_body() {
  setenv("COLL_SPARE", "0", 1);
  static std::atomic<bool> seated{false};
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::seconds(30));
    if (seated) return;
    std::printf("spare: no growth seated it\n");
    std::fflush(stdout);
    _exit(0);
  }).detach();
  coll_comm_t comm = nullptr;
  ASSERT_EQ(coll_comm_init_from_env(&comm), COLL_SUCCESS) << coll_get_last_error(nullptr);
  seated = true;
  int size = 0;
  coll_comm_size(comm, &size);
  if (size == kRanks + 1) {  // it joined before the victim died, and recovers with the members
    comm = recover(comm, kRanks);
    if (comm == nullptr) return;
    coll_comm_size(comm, &size);
  } else {
    EXPECT_TRUE(whole(comm));  // the members' check after their second growth
  }
  EXPECT_EQ(size, kRanks);
  coll_comm_destroy(comm);
}

using Param = std::tuple<std::string, std::string>;  // phase, transports
class KillAnytime : public ::testing::TestWithParam<Param> {};

TEST_P(KillAnytime, SurvivorsRecoverOrNameTheCause) {
  // Plain names, not a structured binding: clang 14 cannot capture one in a lambda.
  const std::string phase = std::get<0>(GetParam()), transports = std::get<1>(GetParam());
  std::mt19937 random(static_cast<unsigned>(std::hash<std::string>{}(phase + transports)));
  const bool grow = phase == "grow";
  for (int trial = 0; trial < 3; ++trial) {
    const int delay_ms = static_cast<int>(random() % 41);
    char dir[] = "/tmp/coll_kill_spares_XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    RankOptions options{
        .limit_s = 60,
        .env = {{"COLL_TIMEOUT_MS", std::to_string(static_cast<int>(kTimeoutMs))}, {"COLL_TRANSPORTS", transports}},
        .killed_rank = kVictim};
    if (grow) options.env["COLL_SPARES_DIR"] = dir;
    run_ranks(
        kRanks + (grow ? 1 : 0),
        [&](int rank, int, const coll_unique_id_t& id) {
          if (rank == kRanks) return spare_body();
          const int descriptors = open_fds();
          coll_comm_t comm = init_or_die(rank, kRanks, id);
          ASSERT_NE(comm, nullptr);
          ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
          if (rank == kVictim) die_in(delay_ms);
          comm = run_phase(phase, comm, rank);
          if (rank == kVictim) std::this_thread::sleep_for(std::chrono::seconds(60));  // dies meanwhile
          comm = recover(comm, rank);
          if (comm == nullptr) return;
          int size = 0;
          coll_comm_size(comm, &size);
          if (grow && size == kRanks - 1) {  // the first growth failed: the spare waits for this one
            coll_comm_t grown = nullptr;
            ASSERT_EQ(coll_comm_grow(comm, 1, nullptr, &grown), COLL_SUCCESS) << last_error(comm);
            coll_comm_destroy(comm);
            comm = grown;
            EXPECT_TRUE(whole(comm));
            coll_comm_size(comm, &size);
          }
          EXPECT_EQ(size, grow ? kRanks : kRanks - 1) << "rank " << rank;
          coll_comm_destroy(comm);
          expect_descriptors_back(descriptors, rank);
        },
        options);
    std::filesystem::remove_all(dir);
    if (HasFailure()) {
      ADD_FAILURE() << "trial " << trial << ": the victim died " << delay_ms << " ms into the " << phase;
      return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Phases, KillAnytime,
                         ::testing::Combine(::testing::Values("allreduce", "buddy", "agree", "shrink", "grow"),
                                            ::testing::Values("shm", "tcp")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

}  // namespace
}  // namespace coll::testing
