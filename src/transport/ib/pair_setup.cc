// A pair's set-up: its control area, completion queue and queue pairs
// (receives posted before the peer can send), and their way to RTS once
// the peer's end is known.
#include "transport/ib/pair.h"

#include "base/error.h"
#include "base/log.h"
#include "transport/ib/pair_wire.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

namespace coll::transport::ib {

using namespace wire;

std::vector<Share> shares(size_t bytes, int qps) {
  if (bytes < kSplitFrom || qps <= 1) return {Share{0, bytes}};
  const size_t blocks = (bytes + 127) / 128;
  const size_t per = (blocks + static_cast<size_t>(qps) - 1) / static_cast<size_t>(qps) * 128;
  std::vector<Share> out;
  for (size_t at = 0; at < bytes; at += per) out.push_back(Share{at, std::min(per, bytes - at)});
  return out;
}

Pair::Pair(PairHost& host, int self, int peer, std::string peer_host, int nqps, const QpSettings& settings)
    : host_(host), self_(self), peer_(peer), settings_(settings) {
  Device& d = host_.device();
  const Verbs& v = d.verbs();
  names_ = PairNames{self, peer, std::move(peer_host), str_cat(d.port().device, ":", int{d.port().port}), "?"};
  detection_ =
      str_cat("COLL_IB_TIMEOUT=", int{settings.timeout}, ", COLL_IB_RETRY_CNT=", int{settings.retry_cnt}, ": about ",
              static_cast<double>(static_cast<int>(detection_seconds(settings) * 10 + 0.5)) / 10, " s");
  void* mem = nullptr;
  const size_t bytes = (sizeof(Control) + 4095) / 4096 * 4096;
  if (posix_memalign(&mem, 4096, bytes) != 0) fail(Code::kSystem, "ib: cannot allocate the control area");
  std::memset(mem, 0, bytes);
  control_ = static_cast<Control*>(mem);
  control_mr_ = v.reg_mr(d.pd(), control_, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (control_mr_ == nullptr)
    fail_errno(Code::kSystem, errno, "ib: registering the control area (is `ulimit -l` too low?)", "ibv_reg_mr");
  cq_ = v.create_cq(d.context(), nqps * (kSendDepth + kRecvDepth), nullptr, nullptr, 0);
  if (cq_ == nullptr) fail_errno(Code::kSystem, errno, "ib: creating a completion queue", "ibv_create_cq");
  std::random_device random;
  for (int q = 0; q < nqps; ++q) {
    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = kSendDepth;
    init.cap.max_recv_wr = kRecvDepth;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = kInline;
    ibv_qp* qp = v.create_qp(d.pd(), &init);
    if (qp == nullptr)
      fail_errno(Code::kSystem, errno, str_cat("ib: creating a queue pair to rank ", peer), "ibv_create_qp");
    qps_.push_back(qp);
    psns_.push_back(random() & 0xffffff);
    in_flight_.push_back(0);
    QpTransition t = to_init(d.port().port);
    if (v.modify_qp(qp, &t.attr, t.mask) != 0) fail_errno(Code::kSystem, errno, "ib: QP to INIT", "ibv_modify_qp");
    // Receives go up before the peer can send: none is ever too late.
    for (int slot = 0; slot < kRecvDepth; ++slot) {
      ibv_sge sge{reinterpret_cast<uintptr_t>(control_->recv_buf[q][slot]), 16, control_mr_->lkey};
      ibv_recv_wr wr{};
      wr.wr_id = wr_id(kRecvOp, static_cast<uint64_t>(q) << 16 | static_cast<uint64_t>(slot));
      wr.sg_list = &sge;
      wr.num_sge = 1;
      ibv_recv_wr* bad = nullptr;
      if (ib::post_recv(qp, &wr, &bad) != 0) fail_errno(Code::kSystem, errno, "ib: posting receives", "ibv_post_recv");
    }
  }
  last_heard_ = std::chrono::steady_clock::now();
}

Pair::~Pair() {
  const Verbs& v = host_.device().verbs();
  for (auto& s : sends_) host_.release(s->region);
  for (auto& [seq, r] : recvs_) host_.release(r->region);
  for (auto& [id, o] : one_sided_) host_.release(o->region);
  for (ibv_qp* qp : qps_) v.destroy_qp(qp);
  if (cq_ != nullptr) v.destroy_cq(cq_);
  if (control_mr_ != nullptr) v.dereg_mr(control_mr_);
  std::free(control_);
}

PairEnd Pair::local_end() const {
  const Device& d = host_.device();
  PairEnd e;
  e.link_layer = d.port().link_layer;
  e.port = d.port().port;
  e.mtu = static_cast<uint8_t>(d.port().active_mtu);
  e.lid = d.port().lid;
  e.gid = d.gid();
  for (size_t q = 0; q < qps_.size(); ++q) e.qps.push_back(QpEnd{qps_[q]->qp_num, psns_[q]});
  e.control_addr = reinterpret_cast<uintptr_t>(control_);
  e.control_rkey = control_mr_->rkey;
  e.device = str_cat(d.port().device, ":", int{d.port().port});
  return e;
}

void Pair::connect(const PairEnd& remote) {
  if (remote.qps.size() != qps_.size())
    fail(Code::kInvalidUsage, "ib: rank ", self_, " has ", qps_.size(), " queue pairs per connection, rank ", peer_,
         " has ", remote.qps.size(), ": set COLL_IB_QPS_PER_CONN alike on every rank");
  remote_ = remote;
  names_.remote = remote.device;
  Device& d = host_.device();
  for (size_t q = 0; q < qps_.size(); ++q) {
    QpTransition rtr = to_rtr(d.port(), d.gid_index(), remote, remote.qps[q], settings_);
    if (d.verbs().modify_qp(qps_[q], &rtr.attr, rtr.mask) != 0)
      fail_errno(Code::kSystem, errno,
                 str_cat("ib: rank ", self_, ": QP ", qps_[q]->qp_num, " to rank ", peer_, " to RTR"), "ibv_modify_qp");
    QpTransition rts = to_rts(QpEnd{qps_[q]->qp_num, psns_[q]}, settings_);
    if (d.verbs().modify_qp(qps_[q], &rts.attr, rts.mask) != 0)
      fail_errno(Code::kSystem, errno, str_cat("ib: rank ", self_, ": QP ", qps_[q]->qp_num, " to RTS"),
                 "ibv_modify_qp");
  }
  connected_ = true;
  last_heard_ = std::chrono::steady_clock::now();
}

}  // namespace coll::transport::ib
