// coll_mem_alloc buffers: exact results for every algorithm and collective
// when large messages travel as references into the sender's buffer, and
// proof that they did (the receiver maps the peer's memfd, which
// /proc/self/maps shows), the fallback when mapping is off, the bound on
// mapped regions, and the allocator's own contract.
#include "reduce/reduce.h"
#include "reduce/reference.h"
#include "support/multirank.h"
#include "support/shared_buffers.h"

#include <coll/coll.h>
#include <coll/coll.hpp>

#include <dirent.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace coll::testing {
namespace {

const coll_datatype_t kTypes[] = {COLL_INT8, COLL_INT64, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64};
const coll_redop_t kOps[] = {COLL_SUM, COLL_MAX, COLL_AVG};
// 0, 1, and primes large enough that messages pass the 64 KiB mark; the
// largest (chunked by the ring, 4 MiB of float32) for a few cases only, to
// stay inside CI's time.
const size_t kCounts[] = {0, 1, 7919, 65537};
constexpr size_t kLarge = 1048583;

int open_descriptors() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

using AlgoRanks = std::tuple<std::string, int>;
class SharedAllreduce : public ::testing::TestWithParam<AlgoRanks> {};

TEST_P(SharedAllreduce, ExactAndReadInPlace) {
  const auto& algorithm = std::get<0>(GetParam());
  const auto& nranks = std::get<1>(GetParam());
  RankOptions options{.limit_s = 400,
                      .env = {{"COLL_TIMEOUT_MS", "120000"}, {"COLL_ALGO", algorithm}, {"COLL_SHM_MAPPED", "1"}}};
  run_ranks(
      nranks,
      [&](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        const int before = coll_mem_mappings();
        bool ok = allreduce_matrix(comm, rank, n, kTypes, kOps, kCounts, kLarge);
        ok = ok && allreduce_case(comm, rank, n, COLL_FLOAT32, COLL_SUM, kLarge, false, Memory::kPrivateInput);
        // Every rank receives a large chunk from some peer: it mapped that
        // peer's buffer (its own buffers were freed again).
        if (ok) EXPECT_GT(coll_mem_mappings(), before) << "rank " << rank << " read no peer buffer in place";
        // COLL_ALGO names the algorithm: no direct access (a peer buffer mapped writable).
        EXPECT_EQ(coll_mem_mappings("rw"), 0) << "rank " << rank;
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      },
      options);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, SharedAllreduce,
                         ::testing::Combine(::testing::Values("ring", "tree", "halving_doubling", "recursive_doubling",
                                                              "direct"),
                                            ::testing::Values(2, 3)),
                         [](const ::testing::TestParamInfo<AlgoRanks>& info) {
                           return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
                         });

// The rest of the family from shared buffers, 3 ranks, a count whose
// messages pass the 64 KiB mark.
TEST(SharedBuffers, EveryCollectiveExact) {
  RankOptions options{.env = {{"COLL_SHM_MAPPED", "1"}}};
  run_ranks(
      3,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        const size_t count = 100003;  // prime; int64: 800 KB per block
        const coll_datatype_t t = COLL_INT64;
        Shared send(count * 8 * n, 0), recv(count * 8 * n, 64);
        auto* s = reinterpret_cast<int64_t*>(send.data);
        auto* r = reinterpret_cast<int64_t*>(recv.data);
        auto value = [](int from, size_t i) { return static_cast<int64_t>(from) * 1000003 + static_cast<int64_t>(i); };

        for (size_t i = 0; i < count; ++i) s[i] = rank == 1 ? value(1, i) : -1;
        ASSERT_EQ(coll_broadcast(s, count, t, 1, comm, nullptr), COLL_SUCCESS) << coll_get_last_error(comm);
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(s[i], value(1, i)) << "broadcast, rank " << rank << " at " << i;

        for (size_t i = 0; i < count; ++i) s[i] = value(rank, i);
        ASSERT_EQ(coll_allgather(s, r, count, t, comm, nullptr), COLL_SUCCESS) << coll_get_last_error(comm);
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(r[p * count + i], value(p, i)) << "allgather, rank " << rank << " block " << p << " at " << i;

        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < count; ++i) s[p * count + i] = value(rank, i) + p;
        ASSERT_EQ(coll_reduce_scatter(s, r, count, t, COLL_SUM, comm, nullptr), COLL_SUCCESS)
            << coll_get_last_error(comm);
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(r[i], value(0, i) + value(1, i) + value(2, i) + 3 * rank) << "reduce_scatter, rank " << rank;

        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < count; ++i) s[p * count + i] = value(rank, i) * 10 + p;
        ASSERT_EQ(coll_alltoall(s, r, count, t, comm, nullptr), COLL_SUCCESS) << coll_get_last_error(comm);
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < count; ++i)
            ASSERT_EQ(r[p * count + i], value(p, i) * 10 + rank) << "alltoall, rank " << rank << " from " << p;

        if (rank < 2) {  // send/recv between 0 and 1
          const int peer = 1 - rank;
          for (size_t i = 0; i < count; ++i) s[i] = value(rank, i);
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          coll_send(s, count, t, peer, comm, nullptr);
          coll_recv(r, count, t, peer, comm, nullptr);
          ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
          for (size_t i = 0; i < count; ++i) ASSERT_EQ(r[i], value(peer, i)) << "recv, rank " << rank << " at " << i;
        }
        EXPECT_GT(coll_mem_mappings(), 2) << "rank " << rank << " read no peer buffer in place";
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      },
      options);
}

// Without COLL_SHM_MAPPED=1 (the default): the same buffers go through the
// slots, exact, and no peer buffer is mapped.
TEST(SharedBuffers, MappingOffGoesThroughTheSlots) {
  RankOptions options{.env = {{"COLL_ALGO", "ring"}}};
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        const int before = coll_mem_mappings();
        {
          Shared send(4 << 20, 0), recv(4 << 20, 0);
          reference::fill_input(COLL_FLOAT32, COLL_SUM, rank, 1 << 20, send.data);
          ASSERT_EQ(coll_allreduce(send.data, recv.data, 1 << 20, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS)
              << coll_get_last_error(comm);
          EXPECT_EQ(reference::count_wrong(COLL_FLOAT32, COLL_SUM, n, 1 << 20, recv.data), 0u);
          EXPECT_EQ(coll_mem_mappings(), before + 2) << "only this rank's own two regions";
        }
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      },
      options);
}

// More regions than a peer keeps mapped: the oldest mappings go, results
// stay exact when a region comes back, and the count of mappings is bounded.
TEST(SharedBuffers, ManyRegionsStayBounded) {
  RankOptions options{.env = {{"COLL_ALGO", "recursive_doubling"}, {"COLL_SHM_MAPPED", "1"}}};
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        constexpr int kRegions = 40;
        constexpr size_t kCount = 32768;  // int32: 128 KiB messages
        std::vector<void*> regions(kRegions);
        for (void*& p : regions) ASSERT_EQ(coll_mem_alloc(&p, kCount * 4), COLL_SUCCESS);
        for (int round = 0; round < 2; ++round)
          for (int k = 0; k < kRegions; ++k) {
            reference::fill_input(COLL_INT32, COLL_SUM, rank + k, kCount, regions[k]);
            ASSERT_EQ(coll_allreduce(regions[k], regions[k], kCount, COLL_INT32, COLL_SUM, comm, nullptr), COLL_SUCCESS)
                << coll_get_last_error(comm);
            // Ranks rank+k over 2 ranks: input_value of "ranks" k and k+1 summed.
            auto* got = static_cast<int32_t*>(regions[k]);
            for (size_t i = 0; i < kCount; ++i) {
              int64_t want = reference::input_value(COLL_INT32, COLL_SUM, k, i) +
                             reference::input_value(COLL_INT32, COLL_SUM, k + 1, i);
              ASSERT_EQ(got[i], static_cast<int32_t>(want)) << "rank " << rank << " region " << k << " at " << i;
            }
          }
        const int mapped = coll_mem_mappings() - kRegions;
        EXPECT_GT(mapped, 0) << "rank " << rank;
        EXPECT_LE(mapped, 32) << "rank " << rank << " keeps more of its peer's regions mapped than the bound";
        for (void* p : regions) EXPECT_EQ(coll_mem_free(p), COLL_SUCCESS);
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      },
      options);
}

// The C++ layer's coll::SharedBuffer: spans over coll_mem_alloc memory that
// peers read in place, moved without a double free, freed at scope end;
// const, its elements are const.
TEST(SharedBuffers, CxxSharedBufferAllreduce) {
  RankOptions options{.env = {{"COLL_TIMEOUT_MS", "60000"}, {"COLL_SHM_MAPPED", "1"}}};
  run_ranks(
      2,
      [&](int rank, int n, const coll_unique_id_t& id) {
        const int before = coll_mem_mappings();
        {
          coll::Communicator comm(n, id, rank);
          constexpr size_t kCount = 65537;  // 256 KiB of float32: past the 64 KiB mark
          coll::SharedBuffer<float> send(kCount), recv(kCount);
          EXPECT_EQ(recv[kCount - 1], 0.0f) << "not zeroed";
          for (size_t i = 0; i < kCount; ++i) send[i] = static_cast<float>((rank + 1) * (i % 1000));
          coll::SharedBuffer<float> moved = std::move(send);
          EXPECT_EQ(send.data(), nullptr);
          EXPECT_EQ(send.size(), 0u);
          const coll::SharedBuffer<float>& input = moved;  // a const buffer is an input only
          static_assert(std::is_same_v<decltype(input.span()), std::span<const float>>);
          static_assert(std::is_same_v<decltype(input[0]), const float&>);
          comm.allreduce(input.span(), recv.span());
          size_t wrong = 0;
          for (size_t i = 0; i < kCount; ++i) wrong += recv[i] != static_cast<float>(3 * (i % 1000));
          EXPECT_EQ(wrong, 0u) << "rank " << rank;
          comm.allreduce(recv.span(), COLL_MAX);  // in place
          EXPECT_EQ(recv[999], 2997.0f);
          // Our two regions, and at least one of the peer's that we read in place.
          EXPECT_GT(coll_mem_mappings(), before + 2) << "rank " << rank << " read no peer buffer in place";
          coll::SharedBuffer<float> empty(0);
          EXPECT_EQ(empty.data(), nullptr);
          EXPECT_TRUE(empty.span().empty());
        }
        // Our two regions are unmapped; mappings of the peer's may remain (its LRU).
        EXPECT_LE(coll_mem_mappings(), before + 2) << "rank " << rank;
      },
      options);
}

TEST(SharedBuffers, AllocatorArgumentsAreChecked) {
  void* p = reinterpret_cast<void*>(1);
  EXPECT_EQ(coll_mem_alloc(nullptr, 64), COLL_INVALID_ARGUMENT);
  EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("ptr"), std::string::npos);
  EXPECT_EQ(coll_mem_alloc(&p, 0), COLL_INVALID_ARGUMENT);
  EXPECT_EQ(p, nullptr);
  EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("bytes"), std::string::npos);
  EXPECT_EQ(coll_mem_free(nullptr), COLL_SUCCESS);

  ASSERT_EQ(coll_mem_alloc(&p, 10000), COLL_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)), 0u);
  const auto* bytes = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0) << "not zeroed at " << i;
  EXPECT_EQ(coll_mem_free(static_cast<char*>(p) + 8), COLL_INVALID_ARGUMENT) << "inside, not the start";
  EXPECT_NE(std::string(coll_get_last_error(nullptr)).find("not memory from coll_mem_alloc"), std::string::npos);
  EXPECT_EQ(coll_mem_free(p), COLL_SUCCESS);
  EXPECT_EQ(coll_mem_free(p), COLL_INVALID_ARGUMENT) << "freed twice";
  std::vector<char> heap(64);
  EXPECT_EQ(coll_mem_free(heap.data()), COLL_INVALID_ARGUMENT);
}

TEST(SharedBuffers, AThousandCyclesLeaveNothing) {
  const int fds = open_descriptors(), maps = coll_mem_mappings();
  for (int i = 0; i < 1000; ++i) {
    void* p = nullptr;
    ASSERT_EQ(coll_mem_alloc(&p, 1 + 4096 * static_cast<size_t>(i % 7)), COLL_SUCCESS) << coll_get_last_error(nullptr);
    static_cast<char*>(p)[0] = 1;
    ASSERT_EQ(coll_mem_free(p), COLL_SUCCESS);
  }
  EXPECT_EQ(open_descriptors(), fds);
  EXPECT_EQ(coll_mem_mappings(), maps);
}

}  // namespace
}  // namespace coll::testing
