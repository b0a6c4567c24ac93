// The verbs transport's failures, provoked for real on a verbs device (in CI:
// Soft-RoCE in a guest, tests/rxe): each must become an error whose message
// names the peer, both ends, the QP and the cause. Where no device is, the
// tests skip and say why; COLLTEST_REQUIRE_TRANSPORTS=ib makes that fatal.
// The tests that take the guest's link down or change its addresses run
// only with COLLTEST_LINK_CONTROL=1 (root in a guest of its own).
#include "support/multirank.h"
#include "support/transport_link.h"
#include "support/transports.h"
#include "transport/registry.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace coll::testing {
namespace {

using Clock = std::chrono::steady_clock;

#define SKIP_WITHOUT_IB() \
  if (runnable({"ib"}).empty()) GTEST_SKIP() << "ib cannot run here: " << transport::find("ib").unavailable()

#define SKIP_WITHOUT_LINK_CONTROL()                                                                                \
  if (std::getenv("COLLTEST_LINK_CONTROL") == nullptr || std::string(std::getenv("COLLTEST_LINK_CONTROL")) != "1") \
  GTEST_SKIP() << "changes the node's links: only with COLLTEST_LINK_CONTROL=1 (tests/rxe sets it in its guests)"

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Rank 1's registered window, as rank 0 sees it.
transport::RemoteMemory exchange_window(Link& link, int rank, std::vector<char>& window) {
  const transport::Registration* mine =
      link.transport->register_memory(window.data(), window.size(), transport::MemoryKind::kHost);
  EXPECT_NE(mine, nullptr);
  const Deadline deadline = Deadline::after_ms(20000);
  link.store->set("window/" + std::to_string(rank),
                  std::string(reinterpret_cast<const char*>(mine->handle.bytes.data()), mine->handle.bytes.size()),
                  deadline);
  const std::string theirs = link.store->get("window/" + std::to_string(1 - rank), deadline, "the peer's window");
  transport::RemoteMemory remote;
  std::memcpy(remote.handle.bytes.data(), theirs.data(), remote.handle.bytes.size());
  remote.bytes = window.size();
  return remote;
}

TEST(IbErrors, AWrongKeyIsARemoteAccessErrorPointingAtRegistration) {
  SKIP_WITHOUT_IB();
  run_ranks(2, [](int rank, int, const coll_unique_id_t& id) {
    Link link = connect_pair(rank, id, "ib");
    std::vector<char> window(4096, 0);
    transport::RemoteMemory remote = exchange_window(link, rank, window);
    if (rank == 0) {
      remote.handle.bytes[8] ^= 0x5a;  // the rkey, as a test program gets it wrong
      char one = 1;
      try {
        wait_all(*link.transport, {link.transport->post_put(1, transport::Buffer{&one, 1}, remote, 8)});
        ADD_FAILURE() << "a put with a wrong key completed";
      } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_EQ(e.code(), Code::kRemote) << m;
        EXPECT_TRUE(contains(m, "rank 0: rxe") || contains(m, "rank 0: ")) << m;
        EXPECT_TRUE(contains(m, "to rank 1 (host ")) << m;
        EXPECT_TRUE(contains(m, ", QP ")) << m;
        EXPECT_TRUE(contains(m, "remote access error")) << m;
        EXPECT_TRUE(contains(m, "a memory registration problem")) << m;
      }
    }
    link.store->set("done/" + std::to_string(rank), "1", Deadline::after_ms(20000));
    link.store->get("done/" + std::to_string(1 - rank), Deadline::after_ms(20000), "the peer's end");
    EXPECT_EQ(window[8], 0) << "the put with a wrong key wrote";
  });
}

// The peer's process is killed: its queue pairs go with it, nothing
// acknowledges, and after (retries + 1) QP timeouts the wait is an error.
TEST(IbErrors, AKilledPeerIsRetryExceededNamingItAndTheTimeout) {
  SKIP_WITHOUT_IB();
  run_ranks(
      2,
      [](int rank, int, const coll_unique_id_t& id) {
        Link link = connect_pair(rank, id, "ib");
        if (rank == 1) raise(SIGKILL);
        std::vector<char> buf(1000);
        const auto start = Clock::now();
        try {
          wait_all(*link.transport, {link.transport->post_recv(1, buf.data(), buf.size(), 7)}, 30000);
          ADD_FAILURE() << "a receive from a killed peer completed";
        } catch (const Error& e) {
          const std::string m = e.what();
          const double s = std::chrono::duration<double>(Clock::now() - start).count();
          EXPECT_EQ(e.code(), Code::kRemote) << m;
          EXPECT_TRUE(contains(m, "to rank 1 (host ")) << m;
          EXPECT_TRUE(contains(m, "transport retry counter exceeded")) << m;
          EXPECT_TRUE(contains(m, "its link or its process is gone")) << m;
          EXPECT_TRUE(contains(m, "COLL_IB_TIMEOUT=14, COLL_IB_RETRY_CNT=3")) << m;
          EXPECT_LT(s, 10.0) << m;
          std::printf("killed peer found after %.2f s: %s\n", s, m.c_str());
        }
      },
      RankOptions{.limit_s = 120, .env = {{"COLL_IB_TIMEOUT", "14"}, {"COLL_IB_RETRY_CNT", "3"}}, .killed_rank = 1});
}

// The link under the port goes down (`ip link set eth0 down`): the device
// reports the port's error, and the pair's pending work fails with it.
TEST(IbErrors, APortThatGoesDownFailsThePendingWork) {
  SKIP_WITHOUT_IB();
  SKIP_WITHOUT_LINK_CONTROL();
  run_ranks(
      2,
      [](int rank, int, const coll_unique_id_t& id) {
        Link link = connect_pair(rank, id, "ib");
        std::vector<char> buf(1000);
        if (rank == 0)
          std::thread([] {
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            EXPECT_EQ(std::system("ip link set eth0 down"), 0);
          }).detach();
        try {
          wait_all(*link.transport, {link.transport->post_recv(1 - rank, buf.data(), buf.size(), 7)}, 30000);
          ADD_FAILURE() << "rank " << rank << ": a receive completed with the link down";
        } catch (const Error& e) {
          const std::string m = e.what();
          EXPECT_EQ(e.code(), Code::kRemote) << m;
          EXPECT_TRUE(contains(m, "port 1 (its link went down)")) << m;
          EXPECT_TRUE(contains(m, "the device reported port error")) << m;
          std::printf("rank %d: %s\n", rank, m.c_str());
        }
        if (rank == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          EXPECT_EQ(std::system("ip link set eth0 up"), 0);
        }
      },
      RankOptions{.limit_s = 120, .env = {{"COLL_IB_TIMEOUT", "18"}}});
}

// An address added while a communicator exists: that communicator goes on
// with the GID it chose, and a communicator made after chooses from the new
// table (here, the new address, through COLL_IB_ADDR_RANGE).
TEST(IbGid, AnAddressAddedWhileACommunicatorExists) {
  SKIP_WITHOUT_IB();
  SKIP_WITHOUT_LINK_CONTROL();
  run_ranks_with_comm(
      2,
      [](coll_comm_t comm, int rank, int) {
        float x = 1;
        ASSERT_EQ(coll_allreduce(&x, &x, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS);
        if (rank == 0) ASSERT_EQ(std::system("ip addr add 10.77.0.1/24 dev eth0"), 0);
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the kernel adds the GID
        float y = 2;
        ASSERT_EQ(coll_allreduce(&y, &y, 1, COLL_FLOAT32, COLL_SUM, comm, nullptr), COLL_SUCCESS)
            << coll_get_last_error(comm);
        EXPECT_EQ(y, 4.0f);
        setenv("COLL_IB_ADDR_RANGE", "10.77.0.0/24", 1);
        coll_comm_t fresh = nullptr;
        ASSERT_EQ(coll_comm_split(comm, 0, rank, &fresh), COLL_SUCCESS) << coll_get_last_error(comm);
        float z = 3;
        ASSERT_EQ(coll_allreduce(&z, &z, 1, COLL_FLOAT32, COLL_SUM, fresh, nullptr), COLL_SUCCESS)
            << coll_get_last_error(fresh);
        EXPECT_EQ(z, 6.0f);
        EXPECT_EQ(coll_comm_destroy(fresh), COLL_SUCCESS);
        ASSERT_EQ(coll_barrier(comm), COLL_SUCCESS);
        if (rank == 0) EXPECT_EQ(std::system("ip addr del 10.77.0.1/24 dev eth0"), 0);
      },
      RankOptions{.limit_s = 120, .env = {{"COLL_TRANSPORTS", "ib"}}});
}

}  // namespace
}  // namespace coll::testing
