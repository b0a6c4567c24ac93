#include "support/multirank.h"

#include "base/config.h"
#include "bootstrap/emulated_node.h"
#include "bootstrap/unique_id.h"
#include "core/test_hooks.h"
#include "support/handshake.h"
#include "transport/registry.h"
#include "transport/router.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

// A forked rank's end: what it printed out, then _exit, which skips the
// parent's gtest teardown that the child inherited.
[[noreturn]] void exit_rank(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(code);
}

int staged_operations = 0;                // this rank's, counted through test_hooks::staged_through_slots
std::vector<std::string> unstaged_calls;  // this rank's collectives that did not stage, by test_hooks::ran_unstaged

// Under COLL_STAGE_HOST_BUFFERS=1 (the staging.* tests) a rank's collectives
// must go through the staging slots: an exact result from the plain path
// would pass those tests without testing the pipeline. Only barrier, send
// and receive stay outside them (docs/ARCHITECTURE.md, "Memory kinds").
void run_body(const RankBody& body, int rank, int nranks, const coll_unique_id_t& id) {
  const bool staged = config::get_bool("COLL_STAGE_HOST_BUFFERS");
  if (staged) {
    test_hooks::staged_through_slots = [] { ++staged_operations; };
    test_hooks::ran_unstaged = [](const char* call) {
      const std::string name = call;
      if (name != "barrier" && name != "send" && name != "recv") unstaged_calls.push_back(name);
    };
  }
  body(rank, nranks, id);
  if (!staged || ::testing::Test::HasFailure()) return;  // a body that failed first may have run none
  EXPECT_GT(staged_operations, 0) << "rank " << rank
                                  << ": COLL_STAGE_HOST_BUFFERS=1, but none of its operations went "
                                     "through the staging slots";
  if (!unstaged_calls.empty())
    ADD_FAILURE() << "rank " << rank << ": COLL_STAGE_HOST_BUFFERS=1, but " << unstaged_calls.size()
                  << " of its collectives ran outside the staging slots, the first a " << unstaged_calls.front();
}

}  // namespace

coll_comm_t init_or_die(int rank, int nranks, const coll_unique_id_t& id) {
  coll_comm_t comm = nullptr;
  coll_result_t r = coll_comm_init_rank(&comm, nranks, id, rank);
  if (r != COLL_SUCCESS) {
    ADD_FAILURE() << "rank " << rank << ": coll_comm_init_rank: " << coll_get_error_string(r) << ": "
                  << coll_get_last_error(nullptr);
    return nullptr;
  }
  return comm;
}

void run_ranks_with_comm(int nranks, const CommBody& body, const RankOptions& options, Destroy destroy) {
  run_ranks(
      nranks,
      [&](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        body(comm, rank, n);
        if (::testing::Test::HasFatalFailure() || destroy == Destroy::kByBody) return;
        const coll_result_t destroyed = coll_comm_destroy(comm);
        if (destroy == Destroy::kExpectSuccess)
          EXPECT_EQ(destroyed, COLL_SUCCESS) << "rank " << rank << ": " << coll_get_last_error(nullptr);
      },
      options);
}

void run_ranks(int nranks, const RankBody& body, const RankOptions& options) {
  auto* shared = static_cast<coll_unique_id_t*>(
      mmap(nullptr, sizeof(coll_unique_id_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(shared, MAP_FAILED);
  Handshake published;  // rank 0 has written the id into `shared`
  std::fflush(stdout);
  std::fflush(stderr);

  std::vector<pid_t> pids(static_cast<size_t>(nranks), -1);
  for (int rank = 0; rank < nranks; ++rank) {
    if (rank == options.absent_rank) continue;
    pid_t pid = fork();
    ASSERT_GE(pid, 0) << "fork failed";
    if (pid == 0) {
      // Under scripts/emulate-cluster.sh the ranks go round the emulated
      // nodes (rank r on node r mod K): the same tests, across "nodes".
      try {
        auto nodes = bootstrap::emulated_nodes();
        if (!nodes.empty()) bootstrap::enter_emulated_node(nodes[static_cast<size_t>(rank) % nodes.size()]);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        exit_rank(5);
      }
      for (const auto& [k, v] : options.env) setenv(k.c_str(), v.c_str(), 1);
      if (options.hosts > 0) setenv("COLL_HOSTID", ("host" + std::to_string(rank % options.hosts)).c_str(), 1);
      try {
        if (rank == 0) {
          coll_unique_id_t id;
          coll_result_t r = coll_get_unique_id(&id);
          if (r != COLL_SUCCESS) {
            std::fprintf(stderr, "rank 0: coll_get_unique_id: %s\n", coll_get_last_error(nullptr));
            exit_rank(3);
          }
          *shared = id;
          published.arrive();
        } else if (!published.wait_for(1, std::chrono::seconds(60))) {
          std::fprintf(stderr, "rank %d: no unique id from rank 0 within 60 s\n", rank);
          exit_rank(4);
        }
        run_body(body, rank, nranks, *shared);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d: exception: %s\n", rank, e.what());
        exit_rank(2);
      }
      leave_now();
    }
    pids[static_cast<size_t>(rank)] = pid;
  }

  // Reap, killing everything still running past the limit.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.limit_s);
  std::vector<int> status(static_cast<size_t>(nranks), 0);
  std::vector<bool> done(static_cast<size_t>(nranks), false);
  int left = 0;
  for (int r = 0; r < nranks; ++r) left += pids[static_cast<size_t>(r)] > 0 ? 1 : 0;
  bool killed = false;
  while (left > 0) {
    for (int r = 0; r < nranks; ++r) {
      size_t i = static_cast<size_t>(r);
      if (pids[i] <= 0 || done[i]) continue;
      siginfo_t info{};  // ended, not reaped: its pid stays its own for the check of /dev/shm below
      if (waitid(P_PID, static_cast<id_t>(pids[i]), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pids[i]) {
        done[i] = true;
        --left;
      }
    }
    if (left > 0 && !killed && std::chrono::steady_clock::now() > deadline) {
      for (int r = 0; r < nranks; ++r)
        if (pids[static_cast<size_t>(r)] > 0 && !done[static_cast<size_t>(r)])
          kill(pids[static_cast<size_t>(r)], SIGKILL);
      killed = true;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::string leftovers;
  for (const std::string& name : transport::segments_left_by(std::vector<int>(pids.begin(), pids.end()))) {
    leftovers += " " + name;
    shm_unlink(("/" + name).c_str());  // reported once: a later test whose rank gets the pid is not blamed
  }
  EXPECT_TRUE(leftovers.empty()) << "left in /dev/shm by the ranks:" << leftovers;
  for (int r = 0; r < nranks; ++r) {
    size_t i = static_cast<size_t>(r);
    if (pids[i] <= 0) continue;
    waitpid(pids[i], &status[i], 0);
    if (r == options.killed_rank) {
      EXPECT_TRUE(WIFSIGNALED(status[i]) && WTERMSIG(status[i]) == SIGKILL) << "rank " << r << " was to be killed";
      continue;
    }
    if (WIFSIGNALED(status[i]))
      ADD_FAILURE() << "rank " << r << " of " << nranks << " was killed by signal " << WTERMSIG(status[i])
                    << (killed ? " (still running after " + std::to_string(options.limit_s) + " s)" : "");
    else
      EXPECT_EQ(WEXITSTATUS(status[i]), 0) << "rank " << r << " of " << nranks << " failed (see its output above)";
  }
  munmap(shared, sizeof(coll_unique_id_t));
}

void leave_now() { exit_rank(::testing::Test::HasFailure() ? 1 : 0); }

void expect_no_segments_left(const coll_unique_id_t& raw) {
  std::string left;
  for (const std::string& name : transport::segments_left(bootstrap::UniqueId::decode(raw).secret)) left += " " + name;
  EXPECT_TRUE(left.empty()) << "left in /dev/shm:" << left;
}

}  // namespace coll::testing
