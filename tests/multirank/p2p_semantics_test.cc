// What frameworks rely on from point-to-point: a group's sends and receives
// matched apart from its collectives, whatever order each rank issues them
// in; non-blocking sends and receives that progress together; messages to
// the own rank; and a group whose ranks disagree failing on every rank.
// Each over shared memory and TCP, with real processes.
#include "support/multirank.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace coll::testing {
namespace {

class P2pSemantics : public ::testing::TestWithParam<std::string> {
 protected:
  RankOptions options(int limit_s = 240) const {
    return RankOptions{.limit_s = limit_s, .env = {{"COLL_TIMEOUT_MS", "60000"}, {"COLL_TRANSPORTS", GetParam()}}};
  }
};

// The message `from` sends with the shift `shift`, its `j`th: every element
// names all three, so a message delivered to the wrong receive shows.
std::vector<int32_t> message(int from, int shift, int j, size_t count) {
  std::vector<int32_t> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<int32_t>((from * 131 + shift * 17 + j) * 1000003 + i);
  return v;
}

// One grouped call: a collective (index into the rank's list) or the next
// message of one (shift, direction) stream.
struct Call {
  int collective = -1;  // >= 0: a collective
  int shift = 0;
  bool send = false;
  int j = 0;
};

// A random merge of the collectives (in their order) with, for each shift,
// two sends to rank + shift and two receives from rank - shift (each pair
// in its order): every rank shuffles differently.
std::vector<Call> shuffled_calls(int collectives, const std::vector<int>& shifts, std::mt19937& rng) {
  std::vector<std::vector<Call>> streams(1);
  for (int c = 0; c < collectives; ++c) streams[0].push_back(Call{.collective = c});
  for (int s : shifts)
    for (bool send : {true, false}) streams.push_back({Call{-1, s, send, 0}, Call{-1, s, send, 1}});
  std::vector<Call> out;
  std::vector<size_t> next(streams.size(), 0);
  for (;;) {
    std::vector<size_t> open;
    for (size_t k = 0; k < streams.size(); ++k)
      if (next[k] < streams[k].size()) open.push_back(k);
    if (open.empty()) return out;
    const size_t k = open[std::uniform_int_distribution<size_t>(0, open.size() - 1)(rng)];
    out.push_back(streams[k][next[k]++]);
  }
}

// Ring shifts by every distance (0 and n: the own rank) mixed with
// allreduces and a broadcast in one group, each rank in its own random
// order. Before the fix a rank that sent before its allreduce met a peer
// that reduced first: COLL_INVALID_USAGE on one side, success on the other.
TEST_P(P2pSemantics, GroupMatchesSendsApartFromCollectives) {
  for (int n : {2, 3, 5, 8}) {
    run_ranks(
        n,
        [](int rank, int n, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, n, id);
          ASSERT_NE(comm, nullptr);
          std::vector<int> shifts;
          for (int s = 1; s <= n; ++s) shifts.push_back(s);  // s = n: to and from this rank
          const size_t counts[] = {1, 7, 1023, 65537};
          for (int round = 0; round < 8; ++round) {
            const size_t count = counts[round % 4];
            std::mt19937 rng(static_cast<unsigned>(rank * 7919 + round));
            const std::vector<Call> calls = shuffled_calls(3, shifts, rng);
            std::vector<std::vector<int32_t>> out, in;
            std::vector<int64_t> sums(3 * count, 0);
            std::vector<int64_t> root_value(count, rank);
            ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
            for (const Call& c : calls) {
              if (c.collective == 0 || c.collective == 2) {
                int64_t* v = sums.data() + (c.collective == 0 ? 0 : count);
                std::fill(v, v + count, rank + c.collective);
                ASSERT_EQ(coll_allreduce(v, v, count, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
              } else if (c.collective == 1) {
                ASSERT_EQ(coll_broadcast(root_value.data(), count, COLL_INT64, n - 1, comm, nullptr), COLL_SUCCESS);
              } else if (c.send) {
                out.push_back(message(rank, c.shift, c.j, count));
                ASSERT_EQ(coll_send(out.back().data(), count, COLL_INT32, (rank + c.shift) % n, comm, nullptr),
                          COLL_SUCCESS);
              } else {
                in.emplace_back(count, -1);
                ASSERT_EQ(coll_recv(in.back().data(), count, COLL_INT32, (rank + n - c.shift) % n, comm, nullptr),
                          COLL_SUCCESS);
              }
            }
            ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
            size_t k = 0;
            for (const Call& c : calls)
              if (c.collective < 0 && !c.send)
                EXPECT_EQ(in[k++], message((rank + n - c.shift) % n, c.shift, c.j, count))
                    << "rank " << rank << ", shift " << c.shift << ", message " << c.j << ", count " << count;
            const int64_t ranks_sum = int64_t{n} * (n - 1) / 2;
            EXPECT_EQ(sums[count - 1], ranks_sum);
            EXPECT_EQ(sums[2 * count - 1], ranks_sum + 2 * n);
            EXPECT_EQ(root_value[count - 1], n - 1);
          }
          coll_comm_destroy(comm);
        },
        options());
  }
}

// Each rank posts its send before its receive, non-blocking, then waits on
// both: a crossing exchange. Before, the sends ran first everywhere and a
// message larger than the transport's buffering waited for ever.
TEST_P(P2pSemantics, CrossingNonBlockingExchangeAtEverySize) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        const int peer = 1 - rank;
        for (size_t count : {size_t{1}, size_t{100000}, size_t{10000000}}) {
          const std::vector<int32_t> out = message(rank, 1, 0, count);
          std::vector<int32_t> in(count, -1);
          coll_request_t send = nullptr, recv = nullptr;
          ASSERT_EQ(coll_send_async(out.data(), count, COLL_INT32, peer, comm, nullptr, &send), COLL_SUCCESS);
          ASSERT_EQ(coll_recv_async(in.data(), count, COLL_INT32, peer, comm, nullptr, &recv), COLL_SUCCESS);
          ASSERT_EQ(coll_wait(send), COLL_SUCCESS) << coll_get_last_error(comm);
          ASSERT_EQ(coll_wait(recv), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_TRUE(in == message(peer, 1, 0, count)) << "count " << count;
        }
        coll_comm_destroy(comm);
      },
      options());
}

// Every rank sends to every rank (itself included) and receives from every
// rank, all non-blocking and sends first, then completes them in a random
// order; then the same mixed with blocking receives, which join the
// non-blocking ones in flight.
TEST_P(P2pSemantics, AllToAllOfNonBlockingMessages) {
  for (int n : {3, 5}) {
    run_ranks(
        n,
        [](int rank, int n, const coll_unique_id_t& id) {
          coll_comm_t comm = init_or_die(rank, n, id);
          ASSERT_NE(comm, nullptr);
          const size_t count = 300007;
          std::vector<std::vector<int32_t>> out, in(static_cast<size_t>(n), std::vector<int32_t>(count, -1));
          std::vector<coll_request_t> requests;
          for (int p = 0; p < n; ++p) {
            out.push_back(message(rank, p, 0, count));
            requests.emplace_back();
            ASSERT_EQ(coll_send_async(out.back().data(), count, COLL_INT32, p, comm, nullptr, &requests.back()),
                      COLL_SUCCESS);
          }
          for (int p = 0; p < n; ++p) {
            requests.emplace_back();
            ASSERT_EQ(coll_recv_async(in[static_cast<size_t>(p)].data(), count, COLL_INT32, p, comm, nullptr,
                                      &requests.back()),
                      COLL_SUCCESS);
          }
          std::mt19937 rng(static_cast<unsigned>(rank));
          std::shuffle(requests.begin(), requests.end(), rng);
          for (coll_request_t r : requests) ASSERT_EQ(coll_wait(r), COLL_SUCCESS) << coll_get_last_error(comm);
          for (int p = 0; p < n; ++p) EXPECT_TRUE(in[static_cast<size_t>(p)] == message(p, rank, 0, count)) << p;

          // Non-blocking sends, then blocking receives.
          requests.clear();
          for (int p = 0; p < n; ++p) {
            requests.emplace_back();
            ASSERT_EQ(coll_send_async(out[static_cast<size_t>(p)].data(), count, COLL_INT32, p, comm, nullptr,
                                      &requests.back()),
                      COLL_SUCCESS);
          }
          for (int p = n - 1; p >= 0; --p) {
            std::fill(in[static_cast<size_t>(p)].begin(), in[static_cast<size_t>(p)].end(), -1);
            ASSERT_EQ(coll_recv(in[static_cast<size_t>(p)].data(), count, COLL_INT32, p, comm, nullptr), COLL_SUCCESS)
                << coll_get_last_error(comm);
            EXPECT_TRUE(in[static_cast<size_t>(p)] == message(p, rank, 0, count)) << p;
          }
          for (coll_request_t r : requests) ASSERT_EQ(coll_wait(r), COLL_SUCCESS) << coll_get_last_error(comm);
          // A collective after them still lines up.
          int64_t x = rank;
          ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
          EXPECT_EQ(x, int64_t{n} * (n - 1) / 2);
          coll_comm_destroy(comm);
        },
        options());
  }
}

// A message to the own rank is a copy: in a group, or non-blocking; a
// blocking one that nothing can receive is refused at once, and the
// communicator stays usable.
TEST_P(P2pSemantics, MessagesToTheOwnRank) {
  run_ranks(
      3,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        for (size_t count : {size_t{0}, size_t{1}, size_t{4099}, size_t{1} << 20}) {
          const std::vector<int32_t> out = message(rank, 0, 0, count), out2 = message(rank, 0, 1, count);
          std::vector<int32_t> in(count, -1), in2(count, -1);
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          ASSERT_EQ(coll_recv(in.data(), count, COLL_INT32, rank, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_send(out.data(), count, COLL_INT32, rank, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_recv(in2.data(), count, COLL_INT32, rank, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_send(out2.data(), count, COLL_INT32, rank, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_TRUE(in == out && in2 == out2) << "in a group, count " << count;

          std::fill(in.begin(), in.end(), -1);
          coll_request_t send = nullptr, recv = nullptr;
          ASSERT_EQ(coll_send_async(out.data(), count, COLL_INT32, rank, comm, nullptr, &send), COLL_SUCCESS);
          ASSERT_EQ(coll_recv_async(in.data(), count, COLL_INT32, rank, comm, nullptr, &recv), COLL_SUCCESS);
          ASSERT_EQ(coll_wait(recv), COLL_SUCCESS) << coll_get_last_error(comm);
          ASSERT_EQ(coll_wait(send), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_TRUE(in == out) << "non-blocking, count " << count;

          // A non-blocking receive, then the blocking send that answers it.
          std::fill(in.begin(), in.end(), -1);
          ASSERT_EQ(coll_recv_async(in.data(), count, COLL_INT32, rank, comm, nullptr, &recv), COLL_SUCCESS);
          ASSERT_EQ(coll_send(out.data(), count, COLL_INT32, rank, comm, nullptr), COLL_SUCCESS)
              << coll_get_last_error(comm);
          ASSERT_EQ(coll_wait(recv), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_TRUE(in == out) << "blocking send, count " << count;
        }
        // Non-blocking ones that disagree, or that nothing answers before the
        // next operation: refused on their requests, and nothing else fails.
        int32_t v = 5, w[2] = {0, 0};
        coll_request_t send = nullptr, recv = nullptr;
        ASSERT_EQ(coll_send_async(&v, 1, COLL_INT32, rank, comm, nullptr, &send), COLL_SUCCESS);
        ASSERT_EQ(coll_recv_async(w, 2, COLL_INT32, rank, comm, nullptr, &recv), COLL_SUCCESS);
        EXPECT_EQ(coll_wait(send), COLL_INVALID_USAGE);
        EXPECT_EQ(coll_wait(recv), COLL_INVALID_USAGE);
        EXPECT_NE(std::string(coll_get_last_error(comm)).find("must agree on count"), std::string::npos)
            << coll_get_last_error(comm);
        ASSERT_EQ(coll_send_async(&v, 1, COLL_INT32, rank, comm, nullptr, &send), COLL_SUCCESS);
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS) << coll_get_last_error(comm);
        EXPECT_EQ(coll_wait(send), COLL_INVALID_USAGE);
        EXPECT_NE(std::string(coll_get_last_error(comm)).find("no counterpart before the next operation"),
                  std::string::npos)
            << coll_get_last_error(comm);
        EXPECT_EQ(coll_send(&v, 1, COLL_INT32, rank, comm, nullptr), COLL_INVALID_USAGE);
        EXPECT_NE(std::string(coll_get_last_error(comm)).find("this rank itself"), std::string::npos)
            << coll_get_last_error(comm);
        // A group whose send to itself has no receive is refused before anything moves.
        ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
        ASSERT_EQ(coll_send(&v, 1, COLL_INT32, rank, comm, nullptr), COLL_SUCCESS);
        EXPECT_EQ(coll_group_end(), COLL_INVALID_USAGE);
        EXPECT_NE(std::string(coll_get_last_error(comm)).find("no receive"), std::string::npos)
            << coll_get_last_error(comm);
        int64_t x = 1;
        ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS)
            << coll_get_last_error(comm);
        EXPECT_EQ(x, n);
        // Destroying the communicator with a send to itself unanswered ends
        // that send at once, not at the timeout (60 s here).
        const auto start = std::chrono::steady_clock::now();
        ASSERT_EQ(coll_send_async(&v, 1, COLL_INT32, rank, comm, nullptr, &send), COLL_SUCCESS);
        coll_comm_destroy(comm);
        EXPECT_EQ(coll_wait(send), COLL_INVALID_USAGE);
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
      },
      options());
}

// Rank 0 sends 10 elements in a group where rank 1 receives 20: rank 1's
// coll_group_end fails, naming the difference, and rank 0 learns it from its
// next operation (or from its group_end already, if rank 1 was quicker), as
// the root of a broadcast that only sends does: never success on both.
TEST_P(P2pSemantics, AGroupWhoseRanksDisagreeFailsOnBoth) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        std::vector<int32_t> buf(20, rank);
        ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
        if (rank == 0)
          ASSERT_EQ(coll_send(buf.data(), 10, COLL_INT32, 1, comm, nullptr), COLL_SUCCESS);
        else
          ASSERT_EQ(coll_recv(buf.data(), 20, COLL_INT32, 0, comm, nullptr), COLL_SUCCESS);
        coll_result_t r = coll_group_end();
        if (rank == 0 && r == COLL_SUCCESS) r = coll_barrier(comm);
        EXPECT_EQ(r, COLL_INVALID_USAGE) << "rank " << rank;
        EXPECT_NE(std::string(coll_get_last_error(comm)).find("count 10, not 20"), std::string::npos)
            << "rank " << rank << ": " << coll_get_last_error(comm);
        coll_comm_destroy(comm);
      },
      RankOptions{.limit_s = 60, .env = {{"COLL_TIMEOUT_MS", "20000"}, {"COLL_TRANSPORTS", GetParam()}}});
}

// A group changes nothing on the wire: one rank's grouped sends meet the
// other's blocking, non-blocking or differently grouped receives, in order,
// and the other way round.
TEST_P(P2pSemantics, GroupedAndUngroupedCallsMeet) {
  run_ranks(
      2,
      [](int rank, int n, const coll_unique_id_t& id) {
        coll_comm_t comm = init_or_die(rank, n, id);
        ASSERT_NE(comm, nullptr);
        const int peer = 1 - rank;
        const size_t count = 300007;
        std::vector<std::vector<int32_t>> in(3, std::vector<int32_t>(count, -1));
        const std::vector<int32_t> a = message(0, 1, 0, count), b = message(0, 1, 1, count),
                                   c = message(0, 1, 2, count);
        if (rank == 0) {  // three sends in one group
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          for (const auto* m : {&a, &b, &c})
            ASSERT_EQ(coll_send(m->data(), count, COLL_INT32, peer, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
        } else {  // a blocking receive, a group of one, a non-blocking one
          ASSERT_EQ(coll_recv(in[0].data(), count, COLL_INT32, peer, comm, nullptr), COLL_SUCCESS)
              << coll_get_last_error(comm);
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          ASSERT_EQ(coll_recv(in[1].data(), count, COLL_INT32, peer, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
          coll_request_t request = nullptr;
          ASSERT_EQ(coll_recv_async(in[2].data(), count, COLL_INT32, peer, comm, nullptr, &request), COLL_SUCCESS);
          ASSERT_EQ(coll_wait(request), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_TRUE(in[0] == a && in[1] == b && in[2] == c);
        }
        // And back: two non-blocking sends against two receives in one group.
        if (rank == 1) {
          coll_request_t requests[2] = {};
          ASSERT_EQ(coll_send_async(a.data(), count, COLL_INT32, peer, comm, nullptr, &requests[0]), COLL_SUCCESS);
          ASSERT_EQ(coll_send_async(b.data(), count, COLL_INT32, peer, comm, nullptr, &requests[1]), COLL_SUCCESS);
          for (coll_request_t r : requests) ASSERT_EQ(coll_wait(r), COLL_SUCCESS) << coll_get_last_error(comm);
        } else {
          ASSERT_EQ(coll_group_start(), COLL_SUCCESS);
          for (int k = 0; k < 2; ++k)
            ASSERT_EQ(coll_recv(in[k].data(), count, COLL_INT32, peer, comm, nullptr), COLL_SUCCESS);
          ASSERT_EQ(coll_group_end(), COLL_SUCCESS) << coll_get_last_error(comm);
          EXPECT_TRUE(in[0] == a && in[1] == b);
        }
        int64_t x = rank;
        ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_INT64, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        EXPECT_EQ(x, 1);
        coll_comm_destroy(comm);
      },
      options());
}

INSTANTIATE_TEST_SUITE_P(Transports, P2pSemantics, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace coll::testing
