// What one rank tells a peer to connect a pair (the per-pair connection
// data), and the queue-pair attributes made from both ends: pure functions
// of recorded port attributes, so that InfiniBand ports (LIDs, no GRH),
// which Soft-RoCE cannot give, are tested as well as RoCE ones.
#pragma once

#include "transport/ib/device.h"

#include <cstdint>
#include <string>
#include <vector>

namespace coll::transport::ib {

struct QpEnd {
  uint32_t qpn = 0;
  uint32_t psn = 0;  // the first packet sequence number it sends with
};

// One end of a pair: the port's address, its queue pairs, and where the
// peer writes to it (the control area: clear-to-send ring, notices).
struct PairEnd {
  uint8_t link_layer = IBV_LINK_LAYER_INFINIBAND;
  uint8_t port = 1;
  uint8_t mtu = IBV_MTU_1024;  // its port's active MTU
  uint16_t lid = 0;
  ibv_gid gid{};
  std::vector<QpEnd> qps;
  uint64_t control_addr = 0;
  uint32_t control_rkey = 0;
  std::string device;  // for messages: "rxe0"

  std::string serialize() const;
  // Throws kRemote naming `from` when the blob is not one.
  static PairEnd parse(const std::string& blob, const std::string& from);
};

// The QP settings of COLL_IB_*.
struct QpSettings {
  uint8_t timeout = 20;       // COLL_IB_TIMEOUT: 4.096 us * 2^timeout per retry
  uint8_t retry_cnt = 7;      // COLL_IB_RETRY_CNT
  uint8_t rnr_retry = 7;      // 7: retry forever while the peer has no receive posted
  uint8_t sl = 0;             // COLL_IB_SL
  uint8_t traffic_class = 0;  // COLL_IB_TC
  uint8_t rd_atomic = 1;      // outstanding RDMA READs
  // From the settings; kInvalidArgument naming the one out of range.
  static QpSettings from_config();
};

struct QpTransition {
  ibv_qp_attr attr{};
  int mask = 0;
};

QpTransition to_init(uint8_t port);
// Throws kSystem when the two ends cannot be connected (InfiniBand to
// Ethernet). local_gid_index: the GID the local port sends from (RoCE).
QpTransition to_rtr(const PortInfo& local, int local_gid_index, const PairEnd& remote, const QpEnd& remote_qp,
                    const QpSettings& settings);
QpTransition to_rts(const QpEnd& local_qp, const QpSettings& settings);

// What a dead peer costs to notice: (retries + 1) local ACK timeouts.
double detection_seconds(const QpSettings& settings);

}  // namespace coll::transport::ib
