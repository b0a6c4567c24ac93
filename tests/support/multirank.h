// Multi-rank tests with real processes: run_ranks() forks one process per
// rank; rank 0 creates the unique id and hands it to the others through
// shared memory, so the test process itself starts no threads before fork.
//
// Inside a rank, use the usual EXPECT_/ASSERT_ macros: a rank whose test
// failed (or threw, or hung past the limit) makes run_ranks() fail in the
// parent, naming the rank and how it ended. Afterwards the parent checks
// that the job left nothing in /dev/shm.
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

// Fails the test if /dev/shm holds a segment of the job of this id.
void expect_no_segments_left(const coll_unique_id_t& id);

// Creates this rank's communicator or fails the test.
coll_comm_t init_or_die(int rank, int nranks, const coll_unique_id_t& id);

}  // namespace coll::testing
