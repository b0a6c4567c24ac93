// The collective family with real processes: broadcast, reduce, allgather,
// reduce_scatter and alltoall for every algorithm that has them x ranks x
// counts x dtypes (x ops) x in place and not x roots {0, last, middle},
// against exact expected values; buffers that a rank must not write are
// checked untouched.
#include "reduce/reduce.h"
#include "reduce/reference.h"
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <vector>

namespace coll::testing {
namespace {

constexpr unsigned char kPoison = 0xA5;

const coll_datatype_t kAllTypes[] = {COLL_INT8,   COLL_UINT8,   COLL_INT32,    COLL_UINT32,  COLL_INT64,
                                     COLL_UINT64, COLL_FLOAT16, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64};
const coll_redop_t kAllOps[] = {COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX, COLL_AVG};

using Bytes = std::vector<unsigned char>;

// Element i of a value pattern owned by `rank` (what that rank contributes).
void fill(coll_datatype_t t, coll_redop_t op, int rank, size_t first, size_t count, void* out) {
  for (size_t i = 0; i < count; ++i) reference::store(t, out, i, reference::input_value(t, op, rank, first + i));
}

bool same(const void* a, const void* b, size_t bytes) { return bytes == 0 || std::memcmp(a, b, bytes) == 0; }

struct Ctx {
  coll_comm_t comm;
  int rank, n;
  std::string what;
};

#define CHECK_OK(call)                                                                            \
  do {                                                                                            \
    coll_result_t r_ = (call);                                                                    \
    if (r_ != COLL_SUCCESS) {                                                                     \
      ADD_FAILURE() << "rank " << x.rank << " " << x.what << ": " << coll_get_last_error(x.comm); \
      return false;                                                                               \
    }                                                                                             \
  } while (0)

bool broadcast_case(const Ctx& x, coll_datatype_t t, size_t count, int root) {
  const size_t es = reduce::datatype_size(t), bytes = count * es;
  Bytes buf(bytes + 16, kPoison), want(bytes);
  fill(t, COLL_SUM, root, 0, count, want.data());
  if (x.rank == root && bytes > 0) std::memcpy(buf.data(), want.data(), bytes);
  CHECK_OK(coll_broadcast(buf.data(), count, t, root, x.comm, nullptr));
  EXPECT_TRUE(same(buf.data(), want.data(), bytes)) << "rank " << x.rank << " " << x.what;
  EXPECT_EQ(buf[bytes], kPoison) << "rank " << x.rank << " " << x.what << ": written past the end";
  return !::testing::Test::HasFailure();
}

bool reduce_case(const Ctx& x, coll_datatype_t t, coll_redop_t op, size_t count, int root, bool in_place) {
  const size_t es = reduce::datatype_size(t), bytes = count * es;
  Bytes send(bytes + 16, kPoison), recv(bytes + 16, kPoison);
  fill(t, op, x.rank, 0, count, send.data());
  Bytes input(send);
  void* out = in_place ? send.data() : recv.data();
  CHECK_OK(coll_reduce(send.data(), out, count, t, op, root, x.comm, nullptr));
  const auto* o = static_cast<const unsigned char*>(out);
  if (x.rank == root) {
    size_t wrong = reference::count_wrong(t, op, x.n, count, out);
    EXPECT_EQ(wrong, 0u) << "rank " << x.rank << " " << x.what;
  } else if (!in_place) {
    for (size_t i = 0; i < bytes; ++i)
      if (o[i] != kPoison) {
        ADD_FAILURE() << "rank " << x.rank << " " << x.what << ": a non-root's recvbuf was written";
        break;
      }
  }
  if (!in_place || x.rank != root) {
    EXPECT_TRUE(same(send.data(), input.data(), send.size()))
        << "rank " << x.rank << " " << x.what << ": input changed";
  }
  EXPECT_EQ(o[bytes], kPoison) << "rank " << x.rank << " " << x.what << ": written past the end";
  return !::testing::Test::HasFailure();
}

bool allgather_case(const Ctx& x, coll_datatype_t t, size_t count, bool in_place) {
  const size_t es = reduce::datatype_size(t), bytes = count * es, all = bytes * static_cast<size_t>(x.n);
  Bytes send(bytes), recv(all + 16, kPoison), want(all);
  for (int b = 0; b < x.n; ++b) fill(t, COLL_SUM, b, 0, count, want.data() + b * bytes);
  fill(t, COLL_SUM, x.rank, 0, count, send.data());
  const void* in = send.data();
  if (in_place) {
    if (bytes > 0) std::memcpy(recv.data() + x.rank * bytes, send.data(), bytes);  // count 0: data() may be null
    in = recv.data() + x.rank * bytes;
  }
  CHECK_OK(coll_allgather(in, recv.data(), count, t, x.comm, nullptr));
  EXPECT_TRUE(same(recv.data(), want.data(), all)) << "rank " << x.rank << " " << x.what;
  EXPECT_EQ(recv[all], kPoison) << "rank " << x.rank << " " << x.what << ": written past the end";
  return !::testing::Test::HasFailure();
}

bool reduce_scatter_case(const Ctx& x, coll_datatype_t t, coll_redop_t op, size_t count, bool in_place) {
  const size_t es = reduce::datatype_size(t), bytes = count * es, all = bytes * static_cast<size_t>(x.n);
  Bytes send(all + 16, kPoison), recv(bytes + 16, kPoison);
  // Block b element j of rank r holds input_value(r, b*count + j): the
  // reduction over ranks of block r is then reference element r*count + j.
  fill(t, op, x.rank, 0, count * static_cast<size_t>(x.n), send.data());
  void* out = in_place ? send.data() + x.rank * bytes : recv.data();
  CHECK_OK(coll_reduce_scatter(send.data(), out, count, t, op, x.comm, nullptr));
  Bytes want(bytes);
  for (size_t j = 0; j < count; ++j)
    reference::expected_element(t, op, x.n, static_cast<size_t>(x.rank) * count + j, want.data() + j * es);
  EXPECT_TRUE(same(out, want.data(), bytes)) << "rank " << x.rank << " " << x.what;
  if (!in_place) {
    EXPECT_EQ(recv[bytes], kPoison) << "rank " << x.rank << " " << x.what << ": written past the end";
  }
  return !::testing::Test::HasFailure();
}

bool alltoall_case(const Ctx& x, coll_datatype_t t, size_t count, bool in_place) {
  const size_t es = reduce::datatype_size(t), bytes = count * es, all = bytes * static_cast<size_t>(x.n);
  Bytes send(all + 16, kPoison), recv(all + 16, kPoison), want(all);
  // Block p element i of rank r: pattern of rank r at p*count + i.
  fill(t, COLL_SUM, x.rank, 0, count * static_cast<size_t>(x.n), send.data());
  for (int p = 0; p < x.n; ++p)
    fill(t, COLL_SUM, p, static_cast<size_t>(x.rank) * count, count, want.data() + p * bytes);
  void* out = in_place ? send.data() : recv.data();
  CHECK_OK(coll_alltoall(send.data(), out, count, t, x.comm, nullptr));
  EXPECT_TRUE(same(out, want.data(), all)) << "rank " << x.rank << " " << x.what;
  EXPECT_EQ(static_cast<unsigned char*>(out)[all], kPoison) << "rank " << x.rank << " " << x.what << ": past the end";
  return !::testing::Test::HasFailure();
}

// (collective, algorithm, nranks, COLL_TRANSPORTS)
using Param = std::tuple<std::string, std::string, int, std::string>;
class Collectives : public ::testing::TestWithParam<Param> {};

TEST_P(Collectives, ExactForEveryDtypeCountPlacementAndRoot) {
  // Named, not bound: clang 14 cannot capture structured bindings in a lambda.
  const auto& collective = std::get<0>(GetParam());
  const auto& algorithm = std::get<1>(GetParam());
  const auto& nranks = std::get<2>(GetParam());
  const auto& transports = std::get<3>(GetParam());
  RankOptions options{
      .limit_s = 500,
      .env = {
          {"COLL_TIMEOUT_MS", "120000"}, {"COLL_ALGO", collective + ":" + algorithm}, {"COLL_TRANSPORTS", transports}}};
  if (transports == "nvlink") options.env["COLL_NVLINK_EMULATE"] = "1";
  run_ranks(
      nranks,
      [&, collective = collective](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        // The n-block collectives move n times the count: keep their largest case near 1 Mi elements in all.
        const bool blocks = collective == "allgather" || collective == "reduce_scatter" || collective == "alltoall";
        const size_t large = blocks ? 1048579 / static_cast<size_t>(n) : 1048579;
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1023}, large})
          for (coll_datatype_t t : kAllTypes)
            for (bool in_place : {false, true})
              for (int root : {0, n - 1, n / 2}) {
                const bool rooted = collective == "broadcast" || collective == "reduce";
                if (!rooted && root != 0) continue;
                if (collective == "broadcast" && in_place) continue;  // one buffer: always "in place"
                // Every op for the reductions on small counts; sum and max on the largest, for time.
                for (coll_redop_t op : kAllOps) {
                  const bool reduces = collective == "reduce" || collective == "reduce_scatter";
                  if (!reduces && op != COLL_SUM) continue;
                  if (reduces && count == large && op != COLL_SUM && op != COLL_AVG) continue;
                  Ctx x{comm, rank, n,
                        collective + "/" + algorithm + " " + reduce::datatype_name(t) + " " + reduce::redop_name(op) +
                            " count=" + std::to_string(count) + (in_place ? " in-place" : "") +
                            " root=" + std::to_string(root) + " n=" + std::to_string(n)};
                  bool ok = collective == "broadcast"        ? broadcast_case(x, t, count, root)
                            : collective == "reduce"         ? reduce_case(x, t, op, count, root, in_place)
                            : collective == "allgather"      ? allgather_case(x, t, count, in_place)
                            : collective == "reduce_scatter" ? reduce_scatter_case(x, t, op, count, in_place)
                                                             : alltoall_case(x, t, count, in_place);
                  if (!ok) {
                    coll_comm_destroy(comm);
                    return;
                  }
                }
              }
        EXPECT_EQ(coll_comm_destroy(comm), COLL_SUCCESS);
      },
      options);
}

std::vector<Param> params() {
  const std::pair<const char*, const char*> pairs[] = {
      {"broadcast", "ring"}, {"broadcast", "tree"},      {"reduce", "tree"},    {"reduce", "direct"},
      {"allgather", "ring"}, {"reduce_scatter", "ring"}, {"alltoall", "direct"}};
  std::vector<Param> out;
  // Shared memory (every rank on this node) for every rank count; TCP for a subset, for time.
  for (const auto& [c, a] : pairs) {
    for (int n : {1, 2, 3, 4, 5, 8}) out.emplace_back(c, a, n, "shm,tcp");
    for (int n : {2, 3, 8}) out.emplace_back(c, a, n, "tcp");
    out.emplace_back(c, a, 3, "nvlink");  // emulated (allreduce_test.cc)
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Family, Collectives, ::testing::ValuesIn(params()), [](const auto& info) {
  return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + std::to_string(std::get<2>(info.param)) +
         "ranks_" +
         (std::get<3>(info.param) == "tcp"      ? "tcp"
          : std::get<3>(info.param) == "nvlink" ? "nvlink_emulated"
                                                : "shm");
});

}  // namespace
}  // namespace coll::testing
