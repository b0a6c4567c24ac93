// The ib transport's pure parts: queue-pair attributes for InfiniBand ports
// (LIDs, no GRH; Soft-RoCE cannot give them) and RoCE ports (GID, traffic
// class) from recorded port attributes, the connection data's wire form,
// how a message is shared among queue pairs, and the completion errors'
// messages. The rest runs on a real verbs stack (tests/rxe).
#include "base/error.h"
#include "transport/ib/completion_error.h"
#include "transport/ib/pair.h"
#include "transport/ib/qp_attrs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace coll::transport::ib {
namespace {

// A ConnectX port on an InfiniBand fabric, as ibv_query_port gave it.
PortInfo ib_port() {
  return PortInfo{"mlx5_0", 1, IBV_PORT_ACTIVE, IBV_MTU_4096, IBV_LINK_LAYER_INFINIBAND, 17, 64, 2, 128};
}
// rxe0 in the test guest: Ethernet, MTU 1024.
PortInfo roce_port() {
  return PortInfo{"rxe0", 1, IBV_PORT_ACTIVE, IBV_MTU_1024, IBV_LINK_LAYER_ETHERNET, 0, 1, 1, 1024};
}

PairEnd remote_end(uint8_t link_layer, ibv_mtu mtu) {
  PairEnd e;
  e.link_layer = link_layer;
  e.mtu = static_cast<uint8_t>(mtu);
  e.lid = 42;
  const uint8_t gid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 16};
  std::memcpy(e.gid.raw, gid, 16);
  e.qps = {QpEnd{0x1234, 0xabcdef}, QpEnd{0x1235, 7}};
  e.control_addr = 0x7f0000001000;
  e.control_rkey = 0x55;
  e.device = "rxe0:1";
  return e;
}

TEST(IbQp, InfinibandIsAddressedByLidWithoutGrh) {
  QpSettings s;
  s.sl = 3;
  const PairEnd r = remote_end(IBV_LINK_LAYER_INFINIBAND, IBV_MTU_2048);
  QpTransition t = to_rtr(ib_port(), 0, r, r.qps[1], s);
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_RTR);
  EXPECT_EQ(t.attr.ah_attr.is_global, 0);
  EXPECT_EQ(t.attr.ah_attr.dlid, 42);
  EXPECT_EQ(t.attr.ah_attr.sl, 3);
  EXPECT_EQ(t.attr.ah_attr.port_num, 1);
  EXPECT_EQ(t.attr.path_mtu, IBV_MTU_2048);  // the smaller of the two ports
  EXPECT_EQ(t.attr.dest_qp_num, 0x1235u);
  EXPECT_EQ(t.attr.rq_psn, 7u);
  EXPECT_EQ(t.mask & IBV_QP_AV, IBV_QP_AV);
}

TEST(IbQp, RoceIsAddressedByGidWithTrafficClass) {
  QpSettings s;
  s.traffic_class = 106;  // DSCP 26
  const PairEnd r = remote_end(IBV_LINK_LAYER_ETHERNET, IBV_MTU_4096);
  QpTransition t = to_rtr(roce_port(), 3, r, r.qps[0], s);
  EXPECT_EQ(t.attr.ah_attr.is_global, 1);
  EXPECT_EQ(t.attr.ah_attr.dlid, 0);
  EXPECT_EQ(std::memcmp(t.attr.ah_attr.grh.dgid.raw, r.gid.raw, 16), 0);
  EXPECT_EQ(t.attr.ah_attr.grh.sgid_index, 3);
  EXPECT_EQ(t.attr.ah_attr.grh.traffic_class, 106);
  EXPECT_EQ(t.attr.ah_attr.grh.hop_limit, 255);
  EXPECT_EQ(t.attr.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(t.attr.dest_qp_num, 0x1234u);
  EXPECT_EQ(t.attr.rq_psn, 0xabcdefu);
}

TEST(IbQp, InfinibandToEthernetIsRefusedWithTheWayOut) {
  const PairEnd r = remote_end(IBV_LINK_LAYER_ETHERNET, IBV_MTU_1024);
  try {
    to_rtr(ib_port(), 0, r, r.qps[0], QpSettings{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Code::kSystem);
    EXPECT_NE(std::string(e.what()).find("mlx5_0 (InfiniBand) cannot reach rxe0:1 (Ethernet)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("COLL_IB_HCA"), std::string::npos);
  }
}

TEST(IbQp, ReadyToSendCarriesTimeoutAndRetries) {
  QpSettings s;
  s.timeout = 14;
  s.retry_cnt = 2;
  QpTransition t = to_rts(QpEnd{9, 0x123456}, s);
  EXPECT_EQ(t.attr.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(t.attr.timeout, 14);
  EXPECT_EQ(t.attr.retry_cnt, 2);
  EXPECT_EQ(t.attr.rnr_retry, 7);
  EXPECT_EQ(t.attr.sq_psn, 0x123456u);
  QpTransition i = to_init(2);
  EXPECT_EQ(i.attr.port_num, 2);
  EXPECT_EQ(i.attr.qp_access_flags, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
}

TEST(IbQp, DefaultsFindADeadPeerInAboutThirtyFourSeconds) {
  QpSettings s;  // NCCL's defaults too: 20 and 7
  EXPECT_NEAR(detection_seconds(s), 34.36, 0.01);
  s.timeout = 14;
  s.retry_cnt = 1;
  EXPECT_NEAR(detection_seconds(s), 0.134, 0.001);
}

TEST(IbQp, ConnectionDataRoundTripsAndForeignBlobsAreRefused) {
  const PairEnd e = remote_end(IBV_LINK_LAYER_ETHERNET, IBV_MTU_1024);
  const PairEnd back = PairEnd::parse(e.serialize(), "rank 1");
  EXPECT_EQ(back.link_layer, e.link_layer);
  EXPECT_EQ(back.mtu, e.mtu);
  EXPECT_EQ(back.lid, 42);
  EXPECT_EQ(std::memcmp(back.gid.raw, e.gid.raw, 16), 0);
  ASSERT_EQ(back.qps.size(), 2u);
  EXPECT_EQ(back.qps[1].qpn, 0x1235u);
  EXPECT_EQ(back.qps[0].psn, 0xabcdefu);
  EXPECT_EQ(back.control_addr, e.control_addr);
  EXPECT_EQ(back.control_rkey, 0x55u);
  EXPECT_EQ(back.device, "rxe0:1");
  std::string cut = e.serialize();
  cut.pop_back();
  EXPECT_THROW(PairEnd::parse(cut, "rank 1"), Error);
  EXPECT_THROW(PairEnd::parse("ready", "rank 1"), Error);
}

TEST(IbShares, SmallMessagesUseOneQueuePairLargeOnesAreSplitIn128ByteBlocks) {
  EXPECT_EQ(shares(0, 4).size(), 1u);
  EXPECT_EQ(shares(128 * 1024 - 1, 4).size(), 1u);
  std::vector<Share> s = shares(1000003, 4);
  ASSERT_EQ(s.size(), 4u);
  size_t total = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].offset, total);
    if (i + 1 < s.size()) EXPECT_EQ(s[i].bytes % 128, 0u);
    total += s[i].bytes;
  }
  EXPECT_EQ(total, 1000003u);
  EXPECT_EQ(s[0].bytes, 250112u);  // ceil(7813 blocks / 4) = 1954 blocks
  EXPECT_EQ(shares(1 << 20, 1).size(), 1u);
  // 129 KiB over 16 queue pairs: whole blocks, so fewer shares than pairs.
  std::vector<Share> few = shares(129 * 1024 + 1, 16);
  EXPECT_EQ(few.size(), 16u);
  EXPECT_EQ(few.back().bytes, 129u * 1024 + 1 - 15 * 8320);
}

TEST(IbErrors, RetryExceededNamesBothEndsTheQpAndTheLikelyCause) {
  PairNames n{2, 5, "node1", "rxe0:1", "rxe0:1"};
  const std::string m =
      completion_error(n, 17, IBV_WC_RETRY_EXC_ERR, "transport retry counter exceeded", "an RDMA write of message data",
                       "COLL_IB_TIMEOUT=20, COLL_IB_RETRY_CNT=7: about 34.4 s", "");
  EXPECT_EQ(m,
            "rank 2: rxe0:1 to rank 5 (host node1, rxe0:1), QP 17: an RDMA write of message data failed: transport "
            "retry counter exceeded (status 12): the peer did not acknowledge in time: its link or its process is "
            "gone, or the QP timeout (COLL_IB_TIMEOUT=20, COLL_IB_RETRY_CNT=7: about 34.4 s) is too short for this "
            "fabric (raise COLL_IB_TIMEOUT)");
}

TEST(IbErrors, AFlushPointsAtTheFirstErrorAndAccessErrorsAtRegistration) {
  PairNames n{0, 1, "node0", "rxe0:1", "rxe0:1"};
  const std::string flush =
      completion_error(n, 3, IBV_WC_WR_FLUSH_ERR, "Work Request Flushed Error", "a put or get", "", "the first one");
  EXPECT_NE(flush.find("the queue pair had already failed; the first error was: the first one"), std::string::npos);
  EXPECT_NE(hint_for(IBV_WC_REM_ACCESS_ERR, "").find("memory registration problem"), std::string::npos);
  EXPECT_NE(event_error(n, "local catastrophic error on rxe0").find("the device reported local catastrophic error"),
            std::string::npos);
}

}  // namespace
}  // namespace coll::transport::ib
