#include "transport/ib/qp_attrs.h"

#include "base/config.h"
#include "base/error.h"

#include <cmath>
#include <cstring>

namespace coll::transport::ib {
namespace {

constexpr uint32_t kBlobMagic = 0x434f4c49;  // "COLI"
constexpr uint8_t kBlobVersion = 1;

template <typename T>
void put(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}

template <typename T>
bool take(const std::string& in, size_t& at, T* v) {
  if (in.size() - at < sizeof(T)) return false;
  std::memcpy(v, in.data() + at, sizeof(T));
  at += sizeof(T);
  return true;
}

uint8_t setting(const char* name, int64_t lo, int64_t hi) {
  const int64_t v = config::get_int(name);
  if (v < lo || v > hi) fail(Code::kInvalidArgument, name, "=", v, ": give a value from ", lo, " to ", hi);
  return static_cast<uint8_t>(v);
}

}  // namespace

std::string PairEnd::serialize() const {
  std::string out;
  put(out, kBlobMagic);
  put(out, kBlobVersion);
  put(out, link_layer);
  put(out, port);
  put(out, mtu);
  put(out, lid);
  put(out, gid);
  put(out, control_addr);
  put(out, control_rkey);
  put(out, static_cast<uint16_t>(qps.size()));
  for (const QpEnd& q : qps) put(out, q);
  put(out, static_cast<uint16_t>(device.size()));
  out += device;
  return out;
}

PairEnd PairEnd::parse(const std::string& blob, const std::string& from) {
  PairEnd e;
  size_t at = 0;
  uint32_t magic = 0;
  uint8_t version = 0;
  uint16_t nqps = 0, name_bytes = 0;
  bool ok = take(blob, at, &magic) && magic == kBlobMagic && take(blob, at, &version) && version == kBlobVersion &&
            take(blob, at, &e.link_layer) && take(blob, at, &e.port) && take(blob, at, &e.mtu) &&
            take(blob, at, &e.lid) && take(blob, at, &e.gid) && take(blob, at, &e.control_addr) &&
            take(blob, at, &e.control_rkey) && take(blob, at, &nqps) && nqps > 0;
  for (uint16_t i = 0; ok && i < nqps; ++i) {
    QpEnd q;
    ok = take(blob, at, &q);
    e.qps.push_back(q);
  }
  ok = ok && take(blob, at, &name_bytes) && blob.size() - at == name_bytes;
  if (!ok)
    fail(Code::kRemote, "ib: the connection data from ", from, " is not coll's (", blob.size(),
         " bytes): do both ranks run the same coll version?");
  e.device = blob.substr(at);
  return e;
}

QpSettings QpSettings::from_config() {
  QpSettings s;
  s.timeout = setting("COLL_IB_TIMEOUT", 1, 31);
  s.retry_cnt = setting("COLL_IB_RETRY_CNT", 0, 7);
  s.sl = setting("COLL_IB_SL", 0, 15);
  s.traffic_class = setting("COLL_IB_TC", 0, 255);
  return s;
}

QpTransition to_init(uint8_t port) {
  QpTransition t;
  t.attr.qp_state = IBV_QPS_INIT;
  t.attr.pkey_index = 0;
  t.attr.port_num = port;
  t.attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  t.mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
  return t;
}

// InfiniBand within a subnet is addressed by LID without a global route
// header; RoCE always by GID, with the traffic class in the GRH.
QpTransition to_rtr(const PortInfo& local, int local_gid_index, const PairEnd& remote, const QpEnd& remote_qp,
                    const QpSettings& settings) {
  if (local.ethernet() != (remote.link_layer == IBV_LINK_LAYER_ETHERNET))
    fail(Code::kSystem, "ib: ", local.device, " (", local.ethernet() ? "Ethernet" : "InfiniBand", ") cannot reach ",
         remote.device, " (", remote.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
         "): choose ports of one fabric with COLL_IB_HCA");
  QpTransition t;
  ibv_qp_attr& a = t.attr;
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = std::min(local.active_mtu, static_cast<ibv_mtu>(remote.mtu));
  a.dest_qp_num = remote_qp.qpn;
  a.rq_psn = remote_qp.psn;
  a.max_dest_rd_atomic = settings.rd_atomic;
  a.min_rnr_timer = 12;  // 0.64 ms before a send that found no receive is retried
  a.ah_attr.port_num = local.port;
  a.ah_attr.sl = settings.sl;
  if (local.ethernet()) {
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = remote.gid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(local_gid_index);
    a.ah_attr.grh.hop_limit = 255;
    a.ah_attr.grh.traffic_class = settings.traffic_class;
  } else {
    a.ah_attr.dlid = remote.lid;
  }
  t.mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
           IBV_QP_MIN_RNR_TIMER;
  return t;
}

QpTransition to_rts(const QpEnd& local_qp, const QpSettings& settings) {
  QpTransition t;
  ibv_qp_attr& a = t.attr;
  a.qp_state = IBV_QPS_RTS;
  a.timeout = settings.timeout;
  a.retry_cnt = settings.retry_cnt;
  a.rnr_retry = settings.rnr_retry;
  a.sq_psn = local_qp.psn;
  a.max_rd_atomic = settings.rd_atomic;
  t.mask =
      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;
  return t;
}

double detection_seconds(const QpSettings& s) { return 4.096e-6 * std::ldexp(1.0, s.timeout) * (s.retry_cnt + 1); }

}  // namespace coll::transport::ib
