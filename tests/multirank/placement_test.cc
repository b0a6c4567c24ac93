// Where ranks run: each rank's thread is pinned to its NUMA node's CPUs
// (its GPU's NUMA node when each local rank has a GPU, else the NUMA nodes
// shared out in blocks), within what it was allowed, unless COLL_BIND=0.
// The node's layout comes from a small NCCL topology file with one CPU per
// NUMA node, so that the test means something on a 2-core machine.
#include "support/cpus.h"
#include "support/multirank.h"

#include <coll/coll.h>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace coll::testing {
namespace {

class Placement : public ::testing::Test {
 protected:
  void SetUp() override {
    cpus_ = allowed_cpus();
    if (cpus_.size() < 2 || cpus_[0] != 0 || cpus_[1] != 1) GTEST_SKIP() << "needs CPUs 0 and 1";
  }
  void TearDown() override {
    if (!file_.empty()) std::remove(file_.c_str());
  }
  // A node of two NUMA nodes, CPU 0 and CPU 1; `gpus` adds one GPU to each,
  // the first (by bus id) on NUMA node 1.
  std::string write_topology(bool gpus) {
    file_ = "/tmp/coll-placement-" + std::to_string(getpid()) + ".xml";
    std::ofstream out(file_);
    out << "<system version=\"1\">\n"
        << "  <cpu numaid=\"0\" affinity=\"00000001\">\n"
        << (gpus ? "    <pci busid=\"0000:81:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x20b0\"/>\n" : "")
        << "  </cpu>\n"
        << "  <cpu numaid=\"1\" affinity=\"00000002\">\n"
        << (gpus ? "    <pci busid=\"0000:03:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x20b0\"/>\n" : "")
        << "  </cpu>\n"
        << "</system>\n";
    return file_;
  }
  // Runs 2 ranks with `env`; each checks the CPUs its thread may use.
  void expect_cpus(const std::map<std::string, std::string>& env, const std::vector<std::vector<int>>& want) {
    RankOptions options;
    options.env = env;
    run_ranks(
        2,
        [&](int rank, int nranks, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, nranks, id);
          ASSERT_NE(comm, nullptr);
          EXPECT_EQ(allowed_cpus(), want[static_cast<size_t>(rank)]) << "rank " << rank;
          coll_comm_destroy(comm);
        },
        options);
  }
  std::vector<int> cpus_;
  std::string file_;
};

TEST_F(Placement, RanksShareTheNumaNodesOut) { expect_cpus({{"COLL_TOPO_FILE", write_topology(false)}}, {{0}, {1}}); }

TEST_F(Placement, OneRankKeepsTheWholeNode) {
  RankOptions options;
  options.env = {{"COLL_TOPO_FILE", write_topology(false)}};
  run_ranks(
      1,
      [&](int rank, int nranks, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, nranks, id);
        ASSERT_NE(comm, nullptr);
        EXPECT_EQ(allowed_cpus(), cpus_);
        coll_comm_destroy(comm);
      },
      options);
}

TEST_F(Placement, EachRankGoesToItsGpusNumaNode) {
  // GPU 0 (bus 03) hangs under NUMA node 1: local rank 0 goes to CPU 1.
  expect_cpus({{"COLL_TOPO_FILE", write_topology(true)}}, {{1}, {0}});
}

TEST_F(Placement, BindZeroLeavesThreadsAsLaunched) {
  expect_cpus({{"COLL_TOPO_FILE", write_topology(false)}, {"COLL_BIND", "0"}}, {cpus_, cpus_});
}

// Two ranks that the scheduler (or a launcher) put on one CPU: a rank
// whose peer has not posted yet yields the CPU to it rather than spin out
// its spin and sleep on a futex, which cost 35 us per 8-byte allreduce
// (docs/PERFORMANCE.md). Seen from the outside, it sleeps seldom: few
// voluntary context switches, where sleeping takes at least one per call
// on one of the two ranks. Both paths that wait: the board (one-shot) and
// the rings (COLL_SHM_ONESHOT_BYTES=0).
TEST_F(Placement, RanksOnOneCpuYieldToEachOtherRatherThanSleep) {
  for (const char* oneshot : {"4072", "0"}) {
    RankOptions options;
    options.env = {{"COLL_BIND", "0"}, {"COLL_TRANSPORTS", "shm"}, {"COLL_SHM_ONESHOT_BYTES", oneshot}};
    run_ranks(
        2,
        [&](int rank, int nranks, const coll_unique_id_t& id) {
          cpu_set_t zero;
          CPU_ZERO(&zero);
          CPU_SET(0, &zero);
          ASSERT_EQ(sched_setaffinity(0, sizeof(zero), &zero), 0);
          coll_comm_t comm = init_or_die(rank, nranks, id);
          ASSERT_NE(comm, nullptr);
          constexpr int kCalls = 2000;
          rusage before{}, after{};
          ASSERT_EQ(getrusage(RUSAGE_THREAD, &before), 0);
          int64_t wrong = 0;
          for (int i = 0; i < kCalls; ++i) {
            int64_t v[2] = {rank + i, -rank};
            ASSERT_EQ(coll_allreduce(v, v, 2, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
            wrong += (v[0] != 2 * i + 1) + (v[1] != -1);
          }
          ASSERT_EQ(getrusage(RUSAGE_THREAD, &after), 0);
          EXPECT_EQ(wrong, 0) << "rank " << rank;
          EXPECT_LT(after.ru_nvcsw - before.ru_nvcsw, kCalls / 4)
              << "rank " << rank << ", COLL_SHM_ONESHOT_BYTES=" << oneshot << ": slept instead of yielding";
          EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
        },
        options);
  }
}

TEST_F(Placement, ABadTopologyFileIsAnErrorAtInit) {
  RankOptions options;
  options.env = {{"COLL_TOPO_FILE", "/no/such/topology.xml"}};
  run_ranks(
      2,
      [&](int rank, int nranks, const coll_unique_id_t& id) {
        coll_comm_t comm = nullptr;
        EXPECT_EQ(coll_comm_init_rank(&comm, nranks, id, rank), COLL_INVALID_ARGUMENT);
        EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("/no/such/topology.xml"), std::string::npos)
            << coll_get_last_error(nullptr);
      },
      options);
}

}  // namespace
}  // namespace coll::testing
