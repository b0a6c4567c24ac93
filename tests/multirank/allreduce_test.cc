// Allreduce with real processes: every rank count x count x dtype x op, in
// place and out of place, against exact expected values (reduce/reference.h).
// Also checks that the input of an out-of-place call is left untouched and
// that nothing is written past the end of the output.
#include "reduce/reduce.h"
#include "reduce/reference.h"
#include "support/multirank.h"
#include "support/transports.h"

#include <coll/coll.hpp>

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace coll::testing {
namespace {

constexpr size_t kGuard = 64;  // bytes after the output that must stay untouched
constexpr unsigned char kGuardByte = 0xA5;

const coll_datatype_t kAllTypes[] = {COLL_INT8,   COLL_UINT8,   COLL_INT32,    COLL_UINT32,  COLL_INT64,
                                     COLL_UINT64, COLL_FLOAT16, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64};
const coll_redop_t kAllOps[] = {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_AVG};

std::string describe(coll_datatype_t t, coll_redop_t op, size_t count, bool in_place, int nranks) {
  return std::string(reduce::datatype_name(t)) + " " + reduce::redop_name(op) + " count=" + std::to_string(count) +
         (in_place ? " in-place" : " out-of-place") + " nranks=" + std::to_string(nranks);
}

// One allreduce on this rank, checked. Returns false after the first failure.
bool check_one(coll_comm_t comm, int rank, int nranks, coll_datatype_t t, coll_redop_t op, size_t count,
               bool in_place) {
  const size_t es = reduce::datatype_size(t);
  std::vector<unsigned char> send(count * es + kGuard), recv(count * es + kGuard, kGuardByte);
  reference::fill_input(t, op, rank, count, send.data());
  std::memset(send.data() + count * es, kGuardByte, kGuard);
  std::vector<unsigned char> input(send);
  void* out = in_place ? send.data() : recv.data();
  const std::string what = describe(t, op, count, in_place, nranks);

  coll_result_t r = coll_allreduce(send.data(), out, count, t, op, comm, nullptr);
  EXPECT_EQ(r, COLL_SUCCESS) << "rank " << rank << " " << what << ": " << coll_get_last_error(comm);
  if (r != COLL_SUCCESS) return false;

  size_t wrong = reference::count_wrong(t, op, nranks, count, out);
  EXPECT_EQ(wrong, 0u) << "rank " << rank << " " << what << ": " << wrong << " wrong elements";
  const auto* out_bytes = static_cast<const unsigned char*>(out);
  for (size_t i = 0; i < kGuard; ++i) {
    if (out_bytes[count * es + i] != kGuardByte) {
      ADD_FAILURE() << "rank " << rank << " " << what << ": byte " << i << " past the end was written";
      return false;
    }
  }
  if (!in_place) {
    EXPECT_EQ(std::memcmp(send.data(), input.data(), send.size()), 0)
        << "rank " << rank << " " << what << ": the input buffer was modified";
  }
  return wrong == 0;
}

void full_matrix(int rank, int nranks, const coll_unique_id_t& id, const std::vector<size_t>& counts) {
  coll_comm_t comm = init_or_die(rank, nranks, id);
  ASSERT_NE(comm, nullptr);
  for (size_t count : counts)
    for (coll_datatype_t t : kAllTypes)
      for (coll_redop_t op : kAllOps)
        for (bool in_place : {false, true})
          if (!check_one(comm, rank, nranks, t, op, count, in_place)) {
            coll_comm_destroy(comm);
            return;  // the other ranks will fail too; stop before a cascade
          }
  EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
}

// Every algorithm (set through COLL_ALGO, as a user would) and the cost
// model's own choice ("auto"), over shared memory (all ranks share this
// node) and over TCP (COLL_TRANSPORTS=tcp). The small-message algorithms
// move n-1 (direct) or log2(n) (recursive doubling) whole vectors per rank,
// so their largest count is smaller; TCP runs a subset of rank counts: the
// matrix stays inside CI's time.
using AlgoRanks = std::tuple<std::string, int, std::string>;
class AllreduceMatrix : public ::testing::TestWithParam<AlgoRanks> {};

TEST_P(AllreduceMatrix, ExactForEveryDtypeOpCountAndPlacement) {
  // Named, not bound: clang 14 cannot capture structured bindings in a lambda.
  const auto& algorithm = std::get<0>(GetParam());
  const auto& nranks = std::get<1>(GetParam());
  const auto& transports = std::get<2>(GetParam());
  RankOptions options{.limit_s = 500, .env = {{"COLL_TIMEOUT_MS", "120000"}, {"COLL_TRANSPORTS", transports}}};
  if (algorithm != "auto") options.env["COLL_ALGO"] = algorithm;  // the one-name form: COLL_ALGO=tree
  // Over verbs on Soft-RoCE (a guest under emulation, tests/rxe), the
  // largest count is 65537 too, and the three-rank runs split messages
  // across two queue pairs.
  const bool small_only = algorithm == "direct" || algorithm == "recursive_doubling" || transports == "ib";
  if (transports == "ib" && nranks == 3) options.env["COLL_IB_QPS_PER_CONN"] = "2";
  if (transports == "nvlink") options.env["COLL_NVLINK_EMULATE"] = "1";
  const std::vector<size_t> counts =
      small_only ? std::vector<size_t>{0, 1, 7, 1023, 65537} : std::vector<size_t>{0, 1, 7, 1023, 1048579};
  run_ranks(
      nranks, [&](int rank, int n, const coll_unique_id_t& id) { full_matrix(rank, n, id, counts); }, options);
}

std::string matrix_name(const ::testing::TestParamInfo<AlgoRanks>& info) {
  const std::string& transports = std::get<2>(info.param);
  std::string t = transports == "nvlink" ? "nvlink_emulated" : transports == "tcp" ? "tcp" : "shm";
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks_" + t;
}

INSTANTIATE_TEST_SUITE_P(Shm, AllreduceMatrix,
                         ::testing::Combine(::testing::Values("auto", "ring", "tree", "halving_doubling",
                                                              "recursive_doubling", "direct"),
                                            ::testing::Values(1, 2, 3, 4, 5, 8), ::testing::Values("shm,tcp")),
                         matrix_name);
INSTANTIATE_TEST_SUITE_P(Tcp, AllreduceMatrix,
                         ::testing::Combine(::testing::Values("auto", "ring", "tree", "halving_doubling"),
                                            ::testing::Values(2, 3, 8), ::testing::Values("tcp")),
                         matrix_name);
// Over the nvlink transport with its GPU emulated (host memory, and
// process_vm_readv for the copy engine): its rendezvous under every
// collective's traffic; tests/gpu runs it on a GPU.
INSTANTIATE_TEST_SUITE_P(NvlinkEmulated, AllreduceMatrix,
                         ::testing::Combine(::testing::Values("ring", "tree"), ::testing::Values(2, 3),
                                            ::testing::Values("nvlink")),
                         matrix_name);
// Over verbs where a device is (none: no tests); tests/rxe runs these on a
// real Soft-RoCE stack in a guest.
INSTANTIATE_TEST_SUITE_P(Ib, AllreduceMatrix,
                         ::testing::Combine(::testing::Values("auto", "ring", "tree", "halving_doubling"),
                                            ::testing::Values(2, 3), ::testing::ValuesIn(runnable({"ib"}))),
                         matrix_name);

// Ranks on several nodes (COLL_HOSTID = host<rank mod nodes>, the nodes
// interleaved as an unhelpful launcher would): shared memory inside a
// node, TCP between nodes over loopback. The rings grouped by node,
// halving-doubling spread over the nodes (5 ranks: unequal nodes), the
// hierarchical allreduce on 2 and 3 nodes, the tree across nodes with
// chains inside, and the cost model's choice.
using AlgoNodes = std::tuple<std::string, int, int>;  // algorithm, ranks, nodes
class AllreduceOnNodes : public ::testing::TestWithParam<AlgoNodes> {};

TEST_P(AllreduceOnNodes, ExactForEveryDtypeOpCountAndPlacement) {
  // Named, not bound: clang 14 cannot capture structured bindings in a lambda.
  const auto& algorithm = std::get<0>(GetParam());
  const auto& nranks = std::get<1>(GetParam());
  const auto& nodes = std::get<2>(GetParam());
  RankOptions options{.limit_s = 500, .env = {{"COLL_TIMEOUT_MS", "120000"}}, .hosts = nodes};
  if (algorithm != "auto") options.env["COLL_ALGO"] = algorithm;
  run_ranks(
      nranks,
      [&](int rank, int n, const coll_unique_id_t& id) {
        full_matrix(rank, n, id, {0, 1, 7, 1023, 1048579});
      },
      options);
}

INSTANTIATE_TEST_SUITE_P(Nodes, AllreduceOnNodes,
                         ::testing::Values(AlgoNodes{"hierarchical", 4, 2}, AlgoNodes{"hierarchical", 6, 3},
                                           AlgoNodes{"ring", 4, 2}, AlgoNodes{"tree", 6, 2},
                                           AlgoNodes{"halving_doubling", 5, 2}, AlgoNodes{"auto", 4, 2}),
                         [](const ::testing::TestParamInfo<AlgoNodes>& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks_" +
                                  std::to_string(std::get<2>(info.param)) + "nodes";
                         });

// Small chunks: many chunks per block, so the pipeline (a chunk of step s+1
// leaving while step s is still arriving) and the staging pool are exercised.
class AllreducePipelined : public ::testing::TestWithParam<AlgoRanks> {};

TEST_P(AllreducePipelined, ExactWithManySmallChunks) {
  // Named, not bound: clang 14 cannot capture structured bindings in a lambda.
  const auto& algorithm = std::get<0>(GetParam());
  const auto& nranks = std::get<1>(GetParam());
  const auto& transports = std::get<2>(GetParam());
  run_ranks(
      nranks,
      [](int rank, int n, const coll_unique_id_t& id) {
        full_matrix(rank, n, id, {1023, 65537});
      },
      RankOptions{.limit_s = 300,
                  .env = {{"COLL_CHUNK_BYTES", "256"},
                          {"COLL_TIMEOUT_MS", "120000"},
                          {"COLL_TRANSPORTS", transports},
                          {"COLL_ALGO", "allreduce:" + algorithm}}});
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllreducePipelined,
                         ::testing::Combine(::testing::Values("ring", "tree", "halving_doubling"),
                                            ::testing::Values(3, 5), ::testing::Values("shm,tcp", "tcp")),
                         matrix_name);

// The C++ layer: spans, RAII, and exceptions carrying the code.
TEST(AllreduceCxx, SpansAndExceptions) {
  run_ranks(3, [](int rank, int nranks, const coll_unique_id_t& id) {
    coll::Communicator comm(nranks, id, rank);
    EXPECT_EQ(comm.rank(), rank);
    EXPECT_EQ(comm.size(), nranks);
    std::vector<int64_t> data(11, rank + 1);
    comm.allreduce(std::span<int64_t>(data), COLL_SUM);
    for (int64_t v : data) EXPECT_EQ(v, 6);
    std::vector<double> in(5, 0.5 * (rank + 1)), out(5);
    comm.allreduce(std::span<const double>(in), std::span<double>(out), COLL_MAX);
    for (double v : out) EXPECT_EQ(v, 1.5);
    try {
      comm.allreduce(data.data(), data.data(), 1, static_cast<coll_datatype_t>(42), COLL_SUM);
      ADD_FAILURE() << "an unknown datatype was accepted";
    } catch (const coll::Exception& e) {
      EXPECT_EQ(e.code(), COLL_INVALID_ARGUMENT);
      EXPECT_NE(std::string(e.what()).find("datatype"), std::string::npos) << e.what();
    }
    // The rest of the family through the C++ layer.
    std::vector<int32_t> b(4, rank == 2 ? 9 : 0);
    comm.broadcast(std::span<int32_t>(b), 2);
    EXPECT_EQ(b, std::vector<int32_t>(4, 9));
    std::vector<double> mine(2, rank), all(6);
    comm.allgather(std::span<const double>(mine), std::span<double>(all));
    EXPECT_EQ(all, (std::vector<double>{0, 0, 1, 1, 2, 2}));
    comm.barrier();
    coll::Communicator solo = comm.split(rank, 0);
    EXPECT_EQ(solo.size(), 1);
    coll::Communicator none = comm.split(COLL_SPLIT_NOCOLOR, 0);
    EXPECT_EQ(none.get(), nullptr);
  });
}

// coll::Group: end() runs the group; a scope left by an exception runs
// nothing and leaves the thread out of any group (a plain call after it
// runs); a span call this layer refuses fails the group, as coll.h's
// refusals do. With the layer's refusal kept from the group, rank 1's
// group ran its second allreduce against rank 0's first; with a bare
// coll_group_start, an exception between it and coll_group_end left every
// later call of the thread recorded into the group, never run.
TEST(AllreduceCxx, GroupsEndOnceAndFailOnARefusal) {
  run_ranks(
      2,
      [](int rank, int nranks, const coll_unique_id_t& id) {
        coll::Communicator comm(nranks, id, rank);
        std::vector<int32_t> a(3, rank + 1), b(5, 10 * (rank + 1));
        {
          coll::Group group;
          comm.allreduce(std::span<int32_t>(a));
          comm.allreduce(std::span<int32_t>(b));
          group.end();
          try {
            group.end();
            ADD_FAILURE() << "a second end() was taken";
          } catch (const coll::Exception& e) {
            EXPECT_EQ(e.code(), COLL_INVALID_USAGE) << e.what();  // and the thread's groups count on, below
          }
        }
        EXPECT_EQ(a, std::vector<int32_t>(3, 3));
        EXPECT_EQ(b, std::vector<int32_t>(5, 30));

        std::vector<int32_t> left(2, 1);
        try {
          coll::Group group;
          comm.allreduce(std::span<int32_t>(left));
          throw std::runtime_error("the caller's own failure");
        } catch (const std::runtime_error&) {
        }
        EXPECT_EQ(left, std::vector<int32_t>(2, 1)) << "a group left by an exception ran";
        int32_t after = rank;
        comm.allreduce(std::span<int32_t>(&after, 1));
        EXPECT_EQ(after, 1) << "the call after it did not run";

        int64_t x = 100 + rank, y = 1000 + rank, shorter = 0;
        std::vector<int64_t> out(2);
        coll::Group group;
        if (rank == 1) {
          EXPECT_THROW(comm.allreduce(std::span<const int64_t>(&x, 1), std::span<int64_t>(out)), coll::Exception);
        } else {
          comm.allreduce(std::span<const int64_t>(&x, 1), std::span<int64_t>(&shorter, 1));
        }
        comm.allreduce(std::span<int64_t>(&y, 1));
        try {
          group.end();
          ADD_FAILURE() << "rank " << rank << ": the group ran";
        } catch (const coll::Exception& e) {
          if (rank == 1) {
            EXPECT_EQ(e.code(), COLL_INVALID_ARGUMENT);
            EXPECT_NE(std::string(e.what()).find("nothing in the group ran"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("differ in size"), std::string::npos) << e.what();
            EXPECT_EQ(y, 1001) << "the group ran its second allreduce against the peer's first";
            comm.abort();
          } else {
            EXPECT_EQ(e.code(), COLL_REMOTE_ERROR) << e.what();
          }
        }
      },
      RankOptions{.env = {{"COLL_TIMEOUT_MS", "30000"}}});
}

// coll::Communicator::shrink: the survivors without the excluded rank, in
// their old order, run on while the old communicator is destroyed.
TEST(AllreduceCxx, ShrinkLeavesTheExcludedOut) {
  run_ranks(
      3,
      [](int rank, int nranks, const coll_unique_id_t& id) {
        coll::Communicator comm(nranks, id, rank);
        comm.barrier();
        if (rank == 1) return;  // excluded: it takes no part
        const int excluded[] = {1};
        coll::Communicator rest = comm.shrink(excluded);
        EXPECT_EQ(rest.size(), 2);
        EXPECT_EQ(rest.rank(), rank == 0 ? 0 : 1);
        int64_t v = rank;
        rest.allreduce(std::span<int64_t>(&v, 1));
        EXPECT_EQ(v, 0 + 2);
      },
      RankOptions{.env = {{"COLL_TIMEOUT_MS", "20000"}}});
}

// Every rank gets the same bits where the operand order shows: a min or
// max with a NaN, a max of +0 and -0, a sum of NaNs with different payloads.
// In recursive doubling both ranks of a pair reduce the pair's data; each
// put its own first, and rank 0 of 2 got NaN for min(NaN, 1) where rank 1
// got 1. Checked for every algorithm, 2 to 5 ranks, by comparing each
// rank's result bytes with rank 0's (an allgather).
TEST(AllreduceBits, EveryRankGetsTheSameBitsWhateverTheOrder) {
  for (const char* algorithm : {"recursive_doubling", "ring", "tree", "halving_doubling", "direct"}) {
    for (int nranks : {2, 3, 4, 5}) {
      SCOPED_TRACE(std::string(algorithm) + ", " + std::to_string(nranks) + " ranks");
      run_ranks(
          nranks,
          [](int rank, int n, const coll_unique_id_t& id) {
            coll::Communicator comm(n, id, rank);
            const float nan = std::numeric_limits<float>::quiet_NaN();
            uint32_t payload = 0x7fc00000u | static_cast<uint32_t>(rank + 1);  // a NaN of this rank's own
            float own_nan = 0;
            std::memcpy(&own_nan, &payload, sizeof(own_nan));
            for (coll_redop_t op : {COLL_MIN, COLL_MAX, COLL_SUM}) {
              // 37 elements: NaN on rank 0 against numbers, +0 and -0 alternating, NaNs of every rank.
              std::vector<float> v(37);
              for (size_t i = 0; i < v.size(); ++i)
                v[i] = i % 3 == 0   ? (rank == 0 ? nan : static_cast<float>(rank))
                       : i % 3 == 1 ? (rank % 2 == 0 ? 0.0f : -0.0f)
                                    : own_nan;
              comm.allreduce(std::span<float>(v), op);
              std::vector<float> all(v.size() * static_cast<size_t>(n));
              comm.allgather(std::span<const float>(v), std::span<float>(all));
              for (int r = 1; r < n; ++r)
                EXPECT_EQ(std::memcmp(all.data(), all.data() + static_cast<size_t>(r) * v.size(), v.size() * 4), 0)
                    << "rank " << r << "'s result differs from rank 0's, op " << op;
            }
          },
          RankOptions{.env = {{"COLL_TIMEOUT_MS", "20000"}, {"COLL_ALGO", std::string("allreduce:") + algorithm}}});
    }
  }
}

// Ranks that disagree on the count get an error on every rank, not a hang
// or a corrupted result: through the plan, where a message meets a receive
// of another size, and one-shot (core/fastpath/board_allreduce.cc), where the blocks differ.
TEST(AllreduceMismatch, DifferentCountsAreAnErrorOnBothRanks) {
  for (const char* oneshot_bytes : {"0", "2048"}) {
    SCOPED_TRACE(std::string("COLL_SHM_ONESHOT_BYTES=") + oneshot_bytes);
    run_ranks(
        2,
        [&](int rank, int nranks, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, nranks, id);
          ASSERT_NE(comm, nullptr);
          std::vector<float> data(rank == 0 ? 100 : 200, 1.0f);
          coll_result_t r =
              coll_allreduce(data.data(), data.data(), data.size(), COLL_FLOAT32, COLL_SUM, comm, nullptr);
          EXPECT_EQ(r, COLL_INVALID_USAGE) << coll_get_last_error(comm);
          std::string message = coll_get_last_error(comm);
          EXPECT_NE(message.find(std::string(oneshot_bytes) == "0" ? "bytes"
                                 : rank == 0                       ? "count 200, not 100"
                                                                   : "count 100, not 200"),
                    std::string::npos)
              << message;
          EXPECT_NE(message.find(rank == 0 ? "rank 1" : "rank 0"), std::string::npos) << message;
          // Its state is unknown from here on: later operations are refused, saying why.
          r = coll_allreduce(data.data(), data.data(), 100, COLL_FLOAT32, COLL_SUM, comm, nullptr);
          EXPECT_EQ(r, COLL_INVALID_USAGE);
          EXPECT_NE(std::string(coll_get_last_error(comm)).find("an earlier operation on this communicator failed"),
                    std::string::npos)
              << coll_get_last_error(comm);
          coll_comm_destroy(comm);
        },
        RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "20000"}, {"COLL_SHM_ONESHOT_BYTES", oneshot_bytes}}});
  }
}

}  // namespace
}  // namespace coll::testing
