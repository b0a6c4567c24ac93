// One TCP message of more than 4 GiB between two processes (label "large":
// about 9 GiB of memory; leave it out with ctest -LE large).
#include "support/multirank.h"
#include "support/transport_link.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

namespace coll::testing {
namespace {

// More than 4 GiB in one message (label "large": about 9 GiB of memory).
TEST(TcpTransportLarge, AMessageOver4GiB) {
  run_ranks(
      2,
      [](int rank, int, const coll_unique_id_t& id) {
        Link link = connect_pair(rank, id);
        const size_t bytes = (size_t{4} << 30) + 4099;
        auto* buf =
            static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        ASSERT_NE(buf, MAP_FAILED);
        const size_t stride = 1 << 20;
        if (rank == 0) {
          for (size_t i = 0; i < bytes; i += stride) buf[i] = static_cast<uint8_t>(i / stride + 1);
          buf[bytes - 1] = 0x77;
          wait_all(*link.transport, {link.transport->post_send(1, buf, bytes, 1)}, 300000);
        } else {
          wait_all(*link.transport, {link.transport->post_recv(0, buf, bytes, 1)}, 300000);
          for (size_t i = 0; i < bytes; i += stride) ASSERT_EQ(buf[i], static_cast<uint8_t>(i / stride + 1)) << i;
          EXPECT_EQ(buf[bytes - 1], 0x77);
        }
        munmap(buf, bytes);
      },
      RankOptions{.limit_s = 500});
}

}  // namespace
}  // namespace coll::testing
