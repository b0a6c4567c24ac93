// Multi-rank tests with real processes: run_ranks() forks one process per
// rank; rank 0 creates the unique id and hands it to the others through
// shared memory, so the test process itself starts no threads before fork.
//
// Inside a rank, use the usual EXPECT_/ASSERT_ macros: a rank whose test
// failed (or threw, or hung past the limit) makes run_ranks() fail in the
// parent, naming the rank and how it ended. Afterwards the parent checks
// that the ranks left nothing in /dev/shm, from any communicator.
#pragma once

#include <coll/coll.h>

#include <functional>
#include <map>
#include <string>

namespace coll::testing {

using RankBody = std::function<void(int rank, int nranks, const coll_unique_id_t& id)>;

struct RankOptions {
  int limit_s = 300;                       // the parent kills ranks still running after this
  std::map<std::string, std::string> env;  // set in every rank before the body runs
  int absent_rank = -1;                    // this rank is not started (it "never arrives")
  int killed_rank = -1;                    // this rank is expected to die by SIGKILL
  int hosts = 0;  // > 0: rank r acts as node "host<r mod hosts>" (COLL_HOSTID): shm inside, TCP between
};

// Runs `body` in `nranks` processes; asserts (gtest) each exited cleanly.
void run_ranks(int nranks, const RankBody& body, const RankOptions& options = {});

// Fails the test if /dev/shm holds a segment of the job of this id (while
// its ranks still run: run_ranks checks what they left once they end).
void expect_no_segments_left(const coll_unique_id_t& id);

// Ends this rank at once, as a process that leaves the job without a word:
// status 0, or 1 if one of its EXPECTs failed (run_ranks then says which).
[[noreturn]] void leave_now();

// Creates this rank's communicator or fails the test.
coll_comm_t init_or_die(int rank, int nranks, const coll_unique_id_t& id);

// What run_ranks_with_comm does with a rank's communicator once the body
// has returned.
enum class Destroy {
  kExpectSuccess,  // destroys it; the test fails unless that is COLL_SUCCESS
  kAnyResult,      // destroys it, whatever that returns (after an abort or a failed call)
  kByBody,         // nothing: the body destroys it itself, to check what destroy leaves
};

using CommBody = std::function<void(coll_comm_t comm, int rank, int nranks)>;

// The prologue and epilogue that most multi-rank tests share: run_ranks()
// with, in every rank, a communicator from coll_comm_init_rank (a rank whose
// init fails fails, and its body does not run), destroyed after the body as
// `destroy` says. A body that stopped at an ASSERT_ leaves its communicator
// alone, as a rank that returned early always has: the rank exits at once,
// which closes everything anyway, and nothing more is asserted of a rank
// that has already failed.
void run_ranks_with_comm(int nranks, const CommBody& body, const RankOptions& options = {},
                         Destroy destroy = Destroy::kExpectSuccess);

}  // namespace coll::testing
