// How a pair finds its peer gone (keep-alive writes, async events), tells
// the peer why it closes (a notice), and names what was pending.
#include "transport/ib/pair.h"

#include "base/error.h"
#include "base/log.h"
#include "transport/ib/pair_wire.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <thread>

namespace coll::transport::ib {

using namespace wire;

// A peer that waits on us answers at the link level even while its process
// is busy; one that is gone answers nothing, and a zero-byte write to it
// fails with retry exceeded after the QP timeout.
void Pair::keep_alive() {
  if (!connected_ || keepalive_out_ || idle()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_heard_ < kKeepAlive) return;
  ibv_send_wr wr{};
  wr.wr_id = wr_id(kKeepAliveOp, 0);
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = remote_.control_addr;
  wr.wr.rdma.rkey = remote_.control_rkey;
  log::trace(log::kNet, "ib: rank ", self_, ": nothing heard from rank ", peer_, " for 1 s: a keep-alive write");
  post(0, wr);
  keepalive_out_ = true;
  last_heard_ = now;
}

void Pair::fail_by_event(const std::string& event) {
  if (failed_.empty()) fail_pair(event_error(names_, event));
  check_failed();
}

bool Pair::owns_qp(uint32_t qpn) const {
  for (ibv_qp* qp : qps_)
    if (qp->qp_num == qpn) return true;
  return false;
}

bool Pair::idle() const { return sends_.empty() && recvs_.empty() && one_sided_.empty() && notify_waiting_.empty(); }

std::string Pair::describe_pending() const {
  if (!failed_.empty()) return str_cat("failed: ", failed_);
  std::string out =
      str_cat(sends_.size(), " send(s), ", recvs_.size(), " receive(s), ", one_sided_.size(), " put/get(s) and ",
              notify_waiting_.size(), " notification wait(s) pending over ", names_.local, " to ", names_.remote);
  if (!sends_.empty() && !sends_.front()->started)
    out += str_cat("; the first send (message ", sends_.front()->seq, ") waits for rank ", peer_, "'s receive");
  return out;
}

void Pair::close(const Error* why) {
  if (!connected_ || !failed_.empty()) return;
  Control::Notice& n = control_->notice_out;
  const std::string text = why ? why->what() : str_cat("rank ", self_, " closed its connection (abort)");
  n.code = static_cast<int32_t>(why ? why->code() : Code::kRemote);
  n.bytes = static_cast<uint32_t>(std::min(text.size(), kMaxNoticeBytes));
  std::memcpy(n.text, text.data(), n.bytes);
  try {
    ibv_sge sge{reinterpret_cast<uintptr_t>(&n), static_cast<uint32_t>(offsetof(Control::Notice, text) + n.bytes),
                control_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id(kNoticeOp, 0);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(kImmNotice);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = remote_.control_addr + offsetof(Control, notice_in);
    wr.wr.rdma.rkey = remote_.control_rkey;
    post(0, wr);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    ibv_wc wc;
    while (std::chrono::steady_clock::now() < until) {
      if (poll_cq(cq_, 1, &wc) > 0 && kind_of(wc.wr_id) == kNoticeOp) break;
      std::this_thread::yield();
    }
  } catch (const Error&) {
    // The pair is gone already: nothing to tell.
  }
  connected_ = false;
}

void Pair::fail_pair(const std::string& message, Code code) {
  if (failed_.empty()) {
    failed_ = message;
    failed_code_ = code;
    log::info(log::kNet, "ib: ", message);
  }
  throw Error(failed_code_, failed_);
}

void Pair::check_failed() const {
  if (!failed_.empty()) throw Error(failed_code_, failed_);
}

const char* Pair::doing(uint64_t id) const {
  switch (kind_of(id)) {
    case kSendData:
      return "an RDMA write of message data";
    case kCts:
      return "announcing a receive (RDMA write)";
    case kOneSidedOp:
      return "a put or get";
    case kKeepAliveOp:
      return "a keep-alive write";
    case kNoticeOp:
      return "a notice";
    default:
      return "a work request";
  }
}

}  // namespace coll::transport::ib
