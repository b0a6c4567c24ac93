// The direct-access allreduce (core/fastpath/peer_access_allreduce.cc): with COLL_SHM_MAPPED=1
// and every rank's buffers from coll_mem_alloc, each rank reduces its slice
// from every input into every output. Exact for every datatype, op, count
// (0, 1, primes, several MiB) and rank count, in place and not, with and
// without non-temporal stores; proof that it ran (each rank maps its peers'
// buffers writable, which /proc/self/maps shows); and the fall back to the
// plan, still exact and writing nothing of a peer's, when one rank's buffer
// is private memory. For both forms, registered and staged
// (staged_access_test): mismatched calls failing on every rank before any
// peer's memory is touched, and non-blocking calls on the worker thread.
#include "support/multirank.h"
#include "support/shared_buffers.h"

#include <coll/coll.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace coll::testing {
namespace {

class DirectAccess : public ::testing::TestWithParam<RanksStream> {};

TEST_P(DirectAccess, ExactForEveryTypeOpAndCount) {
  const int nranks = std::get<0>(GetParam());
  RankOptions options{.limit_s = 400,
                      .env = {{"COLL_TIMEOUT_MS", "120000"},
                              {"COLL_SHM_MAPPED", "1"},
                              {"COLL_SHM_DIRECT_BYTES", "0"},
                              {"COLL_SHM_STREAM_BYTES", std::get<1>(GetParam())}}};
  run_ranks_with_comm(
      nranks,
      [&](coll_comm_t comm, int rank, int n) {
        ASSERT_EQ(coll_mem_mappings("rw"), 0);
        bool ok = allreduce_matrix(comm, rank, n, kDirectTypes, kDirectOps, kDirectCounts, kDirectLarge);
        // Every buffer above is freed again: what is mapped writable now is
        // peers' memory this rank wrote into.
        if (ok) EXPECT_GT(coll_mem_mappings("rw"), 0) << "rank " << rank << " wrote into no peer's buffer";
      },
      options);
}

INSTANTIATE_TEST_SUITE_P(Ranks, DirectAccess, ranks_and_streaming(), ranks_stream_name);

// One rank's input is private memory: every rank learns it from the offers
// and runs the plan instead, exact, and no rank writes into a peer's buffer.
// Then all buffers are shared again, and the direct path runs.
TEST(DirectAccess, OnePrivateBufferSendsEveryRankToThePlan) {
  RankOptions options{.env = {{"COLL_SHM_MAPPED", "1"}}};
  run_ranks_with_comm(
      3,
      [](coll_comm_t comm, int rank, int n) {
        for (bool in_place : {false, true})
          EXPECT_TRUE(allreduce_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, 65537, in_place,
                                     rank != 1 ? Memory::kShared : Memory::kPrivateInput));
        EXPECT_EQ(coll_mem_mappings("rw"), 0) << "rank " << rank << " wrote into a peer's buffer";
        EXPECT_TRUE(allreduce_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, 65537, false, Memory::kShared));
        EXPECT_GT(coll_mem_mappings("rw"), 0) << "rank " << rank << " did not take the direct path";
      },
      options);
}

// The tests that hold for both forms, registered and staged.
class DirectForms : public ::testing::TestWithParam<DirectForm> {};

// Ranks that call different allreduces: the plan's messages would say so;
// here the offers must, on every rank, before any rank touches a peer's
// memory.
TEST_P(DirectForms, DifferentCallsAreAnErrorOnEveryRank) {
  const DirectForm& form = GetParam();
  for (const bool differ_in_count : {true, false}) {
    run_ranks_with_comm(
        3,
        [&](coll_comm_t comm, int rank, int) {
          // 65536 and 131072 share the low 16 bits, all a signature keeps of a count.
          const size_t count = differ_in_count && rank == 2 ? 131072 : 65536;
          const coll_redop_t op = !differ_in_count && rank == 2 ? COLL_MAX : COLL_SUM;
          Buffer send(count * 4, 0, form.shared), recv(count * 4, 0, form.shared);
          const int before = mapped_by_form(form);
          EXPECT_EQ(coll_allreduce(send.data, recv.data, count, COLL_FLOAT32, op, comm, nullptr), COLL_INVALID_USAGE)
              << "rank " << rank;
          const std::string why = coll_get_last_error(comm);
          EXPECT_NE(why.find(differ_in_count ? "called allreduce with count" : "called a different operation"),
                    std::string::npos)
              << "rank " << rank << ": " << why;
          EXPECT_EQ(mapped_by_form(form), before) << "rank " << rank << ": a peer's memory was mapped";
        },
        RankOptions{.env = form.env}, Destroy::kAnyResult);
  }
}

// Non-blocking allreduces take the direct path on the worker thread (the
// staged form makes its staging there) while the caller issues more (its
// compile and the worker's run share no state; make tsan runs this).
TEST_P(DirectForms, NonBlockingOnesRunOnTheWorker) {
  const DirectForm& form = GetParam();
  run_ranks_with_comm(
      2,
      [&](coll_comm_t comm, int rank, int n) {
        constexpr int kOps = 6;
        constexpr size_t kCount = 65537;
        std::vector<std::unique_ptr<Buffer>> bufs;
        for (int i = 0; i < kOps; ++i) bufs.push_back(std::make_unique<Buffer>(kCount * 4, 72, form.shared));
        const int before = mapped_by_form(form);  // the registered form's own buffers
        std::vector<coll_request_t> requests(kOps);
        for (int i = 0; i < kOps; ++i) {
          unsigned char* v = bufs[static_cast<size_t>(i)]->data;
          reference::fill_input(COLL_FLOAT32, COLL_SUM, rank, kCount, v);
          ASSERT_EQ(coll_allreduce_async(v, v, kCount, COLL_FLOAT32, COLL_SUM, comm, nullptr,
                                         &requests[static_cast<size_t>(i)]),
                    COLL_SUCCESS)
              << coll_get_last_error(comm);
          float small = 1.0f;  // private, below the threshold: the plan, compiled here
          ASSERT_EQ(coll_allreduce(&small, &small, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
          EXPECT_EQ(small, 2.0f);
        }
        for (int i = 0; i < kOps; ++i) {
          ASSERT_EQ(coll_wait(requests[static_cast<size_t>(i)]), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_EQ(reference::count_wrong(COLL_FLOAT32, COLL_SUM, n, kCount, bufs[static_cast<size_t>(i)]->data), 0u)
              << "rank " << rank << " operation " << i;
        }
        EXPECT_GT(mapped_by_form(form), before) << "rank " << rank << " mapped no peer's memory";
        bufs.clear();
      },
      RankOptions{.env = form.env});
}

INSTANTIATE_TEST_SUITE_P(Forms, DirectForms, ::testing::Values(kRegisteredForm, kStagedForm),
                         [](const ::testing::TestParamInfo<DirectForm>& info) { return info.param.name; });

// Below COLL_SHM_DIRECT_BYTES, and when COLL_ALGO names an allreduce
// algorithm, the plan runs.
TEST(DirectAccess, SmallOrNamedAlgorithmRunsThePlan) {
  for (const char* algo : {"", "ring"}) {
    RankOptions options{.env = {{"COLL_SHM_MAPPED", "1"}, {"COLL_SHM_DIRECT_BYTES", "64K"}, {"COLL_ALGO", algo}}};
    run_ranks_with_comm(
        2,
        [&](coll_comm_t comm, int rank, int n) {
          EXPECT_TRUE(
              allreduce_case(comm, rank, n, COLL_INT32, COLL_SUM, 16383, false, Memory::kShared));  // 64 KiB - 4
          EXPECT_EQ(coll_mem_mappings("rw"), 0) << "rank " << rank << ": below the threshold";
          EXPECT_TRUE(allreduce_case(comm, rank, n, COLL_INT32, COLL_SUM, 16384, false, Memory::kShared));
          if (std::string(algo).empty())
            EXPECT_GT(coll_mem_mappings("rw"), 0) << "rank " << rank << ": at the threshold";
          else
            EXPECT_EQ(coll_mem_mappings("rw"), 0) << "rank " << rank << ": COLL_ALGO=" << algo;
        },
        options);
  }
}

}  // namespace
}  // namespace coll::testing
