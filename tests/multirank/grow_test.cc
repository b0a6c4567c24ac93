// coll_comm_grow with real processes: a spare joins a communicator's
// members; a spare replaces a rank that shrink left out, after which the
// ranks agree; a member that dies makes the growth fail on the others, and
// their communicator can still be shrunk. The grow id goes from rank 0 to
// the spares through a file, as a launcher's would.
#include "bootstrap/unique_id.h"
#include "core/test_hooks.h"
#include "support/clock.h"
#include "support/comm_checks.h"
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

const RankOptions kOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "5000"}, {"COLL_INIT_TIMEOUT_MS", "5000"}}};

// One file per test process, named by its pid: the ranks are its children.
std::string id_file(pid_t test = getppid()) { return "/tmp/coll_grow_test_" + std::to_string(test); }

// Run by the test process around each test, so no rank reads an old id.
struct FreshIdFile {
  FreshIdFile() { std::remove(id_file(getpid()).c_str()); }
  ~FreshIdFile() {
    std::remove(id_file(getpid()).c_str());
    std::remove((id_file(getpid()) + ".stranger").c_str());
  }
};

void publish(const coll_unique_id_t& id) {
  const std::string tmp = id_file() + ".tmp";
  std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof(id));
  ASSERT_EQ(std::rename(tmp.c_str(), id_file().c_str()), 0);
}

coll_unique_id_t await_id() {
  coll_unique_id_t id{};
  const auto start = Clock::now();
  while (ms_since(start) < 20000) {
    std::ifstream in(id_file(), std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof(id))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "no grow id in " << id_file() << " after 20 s";
  return id;
}

// Rank 0 of `comm` makes the id and publishes it; every member grows.
coll_comm_t grow_by(coll_comm_t comm, int nnew) {
  int rank = -1;
  coll_comm_rank(comm, &rank);
  coll_unique_id_t id{};
  if (rank == 0) {
    EXPECT_EQ(coll_get_unique_id(&id), COLL_SUCCESS);
    publish(id);
  }
  coll_comm_t grown = nullptr;
  EXPECT_EQ(coll_comm_grow(comm, nnew, rank == 0 ? &id : nullptr, &grown), COLL_SUCCESS) << last_error(comm);
  return grown;
}

coll_comm_t join_as_spare(int size, int rank) {
  coll_comm_t comm = nullptr;
  EXPECT_EQ(coll_comm_init_rank(&comm, size, await_id(), rank), COLL_SUCCESS) << coll_get_last_error(nullptr);
  return comm;
}

// The new communicator's size, this rank's place in it, and exact sums.
void expect_works(coll_comm_t comm, int size, int rank) {
  if (!expect_place_and_sum(comm, size, rank)) return;
  std::vector<float> v(10007, static_cast<float>(rank));
  ASSERT_EQ(coll_allreduce(v.data(), v.data(), v.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
  for (float x : v) ASSERT_EQ(x, static_cast<float>(size * (size - 1) / 2));
}

// The new rank's part of a growth to `size`: it joins last, and the new
// communicator works.
void spare_joins(int size) {
  coll_comm_t grown = join_as_spare(size, size - 1);
  ASSERT_NE(grown, nullptr);
  expect_works(grown, size, size - 1);
  coll_comm_destroy(grown);
}

// A growth by one that a member's death fails: at once (the dead member is
// found at the first look, or fails the agreement on the id), not at the
// 5 s timeout. `id`: rank 0's, or null.
void expect_growth_fails_at_once(coll_comm_t comm, int rank, const coll_unique_id_t* id) {
  const auto start = Clock::now();
  coll_comm_t grown = nullptr;
  const coll_result_t r = coll_comm_grow(comm, 1, id, &grown);
  std::printf("rank %d: grow returned %d after %.0f ms: %s\n", rank, r, ms_since(start), last_error(comm).c_str());
  EXPECT_NE(r, COLL_SUCCESS);
  EXPECT_LT(ms_since(start), 2500) << "rank " << rank << ": the growth failed at the timeout, not at once";
}

// A member's part: `members` ranks grow by one; both communicators work.
void member_grows(int rank, int members, const coll_unique_id_t& id) {
  coll_comm_t comm = init_or_die(rank, members, id);
  ASSERT_NE(comm, nullptr);
  coll_comm_t grown = grow_by(comm, 1);
  ASSERT_NE(grown, nullptr);
  expect_works(grown, members + 1, rank);
  expect_works(comm, members, rank);  // the old one is untouched
  coll_comm_destroy(grown);
  coll_comm_destroy(comm);
}

// Ranks 0 to 2 form a communicator; rank 3, a spare, joins it by grow.
TEST(Grow, ASpareJoinsAfterTheMembersInOrder) {
  FreshIdFile fresh;
  run_ranks(
      4,
      [](int rank, int, const coll_unique_id_t& id) {
        if (rank == 3) return spare_joins(4);
        member_grows(rank, 3, id);
      },
      kOptions);
}

// Ranks 0 to 3 form a communicator; rank 2 dies; the survivors shrink and
// grow by rank 4, a spare, which takes the last place; then all four agree.
TEST(Grow, ASpareReplacesARankThatShrinkLeftOut) {
  FreshIdFile fresh;
  run_ranks(
      5,
      [](int rank, int, const coll_unique_id_t& id) {
        if (rank == 4) {
          coll_comm_t grown = join_as_spare(4, 3);
          ASSERT_NE(grown, nullptr);
          expect_works(grown, 4, 3);
          int flag = 0x10 | 0x7;  // a bit all set, its own of 0xf cleared, as each member clears its own
          ASSERT_EQ(coll_comm_agree(grown, &flag, nullptr, nullptr), COLL_SUCCESS) << last_error(grown);
          EXPECT_EQ(flag, 0x10);
          coll_comm_destroy(grown);
          return;
        }
        coll_comm_t comm = init_or_die(rank, 4, id);
        ASSERT_NE(comm, nullptr);
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
        if (rank == 2) leave_now();
        coll_comm_t survivors = nullptr;
        ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &survivors), COLL_SUCCESS) << last_error(comm);
        const int new_rank = rank < 2 ? rank : rank - 1;
        coll_comm_t grown = grow_by(survivors, 1);
        ASSERT_NE(grown, nullptr);
        expect_works(grown, 4, new_rank);
        int flag = 0x10 | (0xf ^ (1 << new_rank));
        ASSERT_EQ(coll_comm_agree(grown, &flag, nullptr, nullptr), COLL_SUCCESS) << last_error(grown);
        EXPECT_EQ(flag, 0x10);
        coll_comm_destroy(grown);
        coll_comm_destroy(survivors);
        coll_comm_destroy(comm);
      },
      kOptions);
}

// Ranks 0 to 2 form a communicator and rank 1 exits before the growth:
// ranks 0 and 2 see it fail within the timeout, and shrink their
// communicator into a working pair. The spare's join times out too.
TEST(Grow, AMemberThatDiesFailsItOnTheOthersAndShrinkStillWorks) {
  FreshIdFile fresh;
  run_ranks(
      4,
      [](int rank, int, const coll_unique_id_t& id) {
        if (rank == 3) {
          coll_comm_t grown = nullptr;
          EXPECT_NE(coll_comm_init_rank(&grown, 4, await_id(), 3), COLL_SUCCESS);
          return;
        }
        coll_comm_t comm = init_or_die(rank, 3, id);
        ASSERT_NE(comm, nullptr);
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
        if (rank == 1) leave_now();
        coll_unique_id_t gid{};
        if (rank == 0) {
          ASSERT_EQ(coll_get_unique_id(&gid), COLL_SUCCESS);
          publish(gid);
        }
        const auto start = Clock::now();
        coll_comm_t grown = nullptr;
        const coll_result_t r = coll_comm_grow(comm, 1, rank == 0 ? &gid : nullptr, &grown);
        const double ms = ms_since(start);
        std::printf("rank %d: grow returned %d after %.1f ms: %s\n", rank, r, ms, last_error(comm).c_str());
        EXPECT_NE(r, COLL_SUCCESS);
        EXPECT_EQ(grown, nullptr);
        EXPECT_LT(ms, 5000 + 3000.0);
        coll_comm_t survivors = nullptr;
        ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &survivors), COLL_SUCCESS) << last_error(comm);
        expect_works(survivors, 2, rank == 0 ? 0 : 1);
        coll_comm_destroy(survivors);
        coll_comm_destroy(comm);
      },
      kOptions);
}

// A stranger that knows the store's address but not the job's secret tries
// to take the new rank's place first: it is refused, and the spare with the
// id joins the members as if it had not come.
TEST(Grow, AStrangerWithTheWrongSecretIsRefusedAndTheMembersGoOn) {
  FreshIdFile fresh;
  run_ranks(
      5,
      [](int rank, int, const coll_unique_id_t& id) {
        if (rank == 4) {  // the stranger: the right address, a forged secret
          bootstrap::UniqueId job = bootstrap::UniqueId::decode(await_id());
          job.secret[0] ^= 1;
          const coll_unique_id_t forged = job.encode();
          coll_comm_t comm = nullptr;
          const coll_result_t r = coll_comm_init_rank(&comm, 4, forged, 3);
          std::printf("stranger: %d: %s\n", r, coll_get_last_error(nullptr));
          EXPECT_NE(r, COLL_SUCCESS);
          EXPECT_EQ(comm, nullptr);
          std::ofstream(id_file() + ".stranger").flush();  // the spare comes after
          return;
        }
        if (rank == 3) {
          const auto start = Clock::now();
          while (!std::ifstream(id_file() + ".stranger") && ms_since(start) < 20000)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          return spare_joins(4);
        }
        member_grows(rank, 3, id);
      },
      kOptions);
}

// Members that disagree on nnew, or a rank 0 without an id, fail the
// growth on every member at once, each saying why; the communicator still
// works.
TEST(Grow, MembersThatDisagreeAllFailAtOnceAndSayWhy) {
  run_ranks(
      3,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        coll_unique_id_t gid{};
        if (rank == 0) ASSERT_EQ(coll_get_unique_id(&gid), COLL_SUCCESS);
        coll_comm_t grown = nullptr;
        auto start = Clock::now();
        EXPECT_EQ(coll_comm_grow(comm, rank == 2 ? 2 : 1, rank == 0 ? &gid : nullptr, &grown), COLL_INVALID_ARGUMENT);
        EXPECT_NE(last_error(comm).find("nnew is"), std::string::npos) << last_error(comm);
        EXPECT_LT(ms_since(start), 2000);
        EXPECT_EQ(grown, nullptr);
        start = Clock::now();  // rank 0 passes no id, and no launcher keeps spares
        const coll_result_t r = coll_comm_grow(comm, 1, nullptr, &grown);
        EXPECT_EQ(r, rank == 0 ? COLL_INVALID_ARGUMENT : COLL_REMOTE_ERROR) << last_error(comm);
        EXPECT_NE(last_error(comm).find(rank == 0 ? "null pointer" : "rank 0 has no id"), std::string::npos)
            << last_error(comm);
        EXPECT_LT(ms_since(start), 2000);
        expect_works(comm, n, rank);
        coll_comm_destroy(comm);
      },
      kOptions);
}

// A member dies as rank 0's id goes out: the members after it in the
// broadcast fail there, and the growth's agreement that every member has
// the id fails it on the others at once, rather than leave them waiting
// for those to join until the timeout; the three then shrink into a
// working communicator.
TEST(Grow, AMemberThatDiesInTheBroadcastFailsItAtOnceOnEveryMember) {
  RankOptions options = kOptions;
  options.killed_rank = 2;
  run_ranks(
      4,
      [](int rank, int, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, 4, id);
        ASSERT_NE(comm, nullptr);
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << last_error(comm);
        if (rank == 2) test_hooks::grow_broadcasting = [] { raise(SIGKILL); };
        coll_unique_id_t gid{};
        if (rank == 0) ASSERT_EQ(coll_get_unique_id(&gid), COLL_SUCCESS);
        expect_growth_fails_at_once(comm, rank, rank == 0 ? &gid : nullptr);
        coll_comm_t survivors = nullptr;
        ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &survivors), COLL_SUCCESS) << last_error(comm);
        expect_works(survivors, 3, rank < 2 ? rank : rank - 1);
        coll_comm_destroy(survivors);
        coll_comm_destroy(comm);
      },
      options);
}

// Spares under a launcher (COLL_SPARES_DIR): a member dies after the id is
// out, so the first growth fails; its spare goes back to waiting, and
// takes the seat the survivors offer when they grow again.
TEST(Grow, ASpareOfAFailedGrowthWaitsForTheNext) {
  char dir[] = "/tmp/coll_spares_test_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string spares = dir;
  RankOptions options = kOptions;
  options.env["COLL_SPARES_DIR"] = spares;
  options.killed_rank = 2;
  run_ranks(
      4,
      [](int rank, int, const coll_unique_id_t& id) {
        if (rank == 3) {
          setenv("COLL_SPARE", "0", 1);
          coll_comm_t grown = nullptr;
          ASSERT_EQ(coll_comm_init_from_env(&grown), COLL_SUCCESS) << coll_get_last_error(nullptr);
          expect_works(grown, 3, 2);
          coll_comm_destroy(grown);
          return;
        }
        coll_comm_t comm = init_or_die(rank, 3, id);
        ASSERT_NE(comm, nullptr);
        if (rank == 2) test_hooks::grow_joining = [] { raise(SIGKILL); };
        expect_growth_fails_at_once(comm, rank, nullptr);  // rank 2's standby refuses at the first look
        coll_comm_t grown = nullptr;
        coll_comm_t survivors = nullptr;
        ASSERT_EQ(coll_comm_shrink(comm, nullptr, 0, &survivors), COLL_SUCCESS) << last_error(comm);
        ASSERT_EQ(coll_comm_grow(survivors, 1, nullptr, &grown), COLL_SUCCESS) << last_error(survivors);
        expect_works(grown, 3, rank);
        coll_comm_destroy(grown);
        coll_comm_destroy(survivors);
        coll_comm_destroy(comm);
      },
      options);
  // The spare sat in the first offer, which failed, then in the second.
  auto read = [&](const std::string& name) {
    std::string text;
    std::ifstream(spares + "/" + name) >> text;
    return text;
  };
  EXPECT_EQ(read("offer0.closed"), "failed");
  EXPECT_EQ(read("offer1.closed"), "joined");
  EXPECT_EQ(read("offer1.seat0"), "0");  // COLL_SPARE names it
  EXPECT_TRUE(std::filesystem::exists(spares + "/offer1")) << "no second offer";
  std::filesystem::remove_all(spares);
}

}  // namespace
}  // namespace coll::testing
