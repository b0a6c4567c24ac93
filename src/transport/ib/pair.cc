// A pair's data path: sends behind the peer's clear-to-send entries,
// receives announced ahead, puts and gets, and the completions that end
// them.
#include "transport/ib/pair.h"

#include "base/error.h"
#include "base/log.h"
#include "transport/ib/pair_wire.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <thread>

namespace coll::transport::ib {

using namespace wire;

void Pair::post(int qp, ibv_send_wr& wr) {
  ibv_send_wr* bad = nullptr;
  const int rc = ib::post_send(qps_[static_cast<size_t>(qp)], &wr, &bad);
  if (rc != 0)
    fail_pair(str_cat("rank ", self_, ": ", names_.local, " to rank ", peer_, ", QP ",
                      qps_[static_cast<size_t>(qp)]->qp_num, ": ibv_post_send: ", std::strerror(rc)),
              Code::kSystem);
  ++in_flight_[static_cast<size_t>(qp)];
}

// Puts and gets are posted at once: when the queue pair is full, its
// completions are taken first (handed out by the next progress).
void Pair::make_room(int qp, int wrs) {
  ibv_wc wcs[32];
  while (in_flight_[static_cast<size_t>(qp)] + wrs > kDataCap) {
    const int n = poll_cq(cq_, 32, wcs);
    if (n < 0) fail_pair(str_cat("rank ", self_, ": ibv_poll_cq failed on the pair with rank ", peer_), Code::kSystem);
    for (int i = 0; i < n; ++i) take_completion(wcs[i], early_);
    if (n == 0) std::this_thread::yield();
  }
}

void Pair::post_send(RequestId id, const Buffer& buffer, uint64_t tag) {
  check_failed();
  auto s = std::make_unique<Send>();
  s->id = id, s->buffer = buffer, s->tag = tag, s->seq = next_send_seq_++;
  sends_.push_back(std::move(s));
  start_sends();
}

void Pair::post_recv(RequestId id, const Buffer& buffer, uint64_t tag) {
  check_failed();
  auto r = std::make_unique<Recv>();
  r->id = id, r->buffer = buffer, r->tag = tag, r->seq = next_recv_seq_++;
  r->imms_left = static_cast<int>(shares(buffer.bytes, static_cast<int>(qps_.size())).size());
  recvs_[r->seq] = std::move(r);
  issue_cts();
}

// A receive is announced once the sender has taken the entry its slot held
// before: the receive kCtsSlots earlier has completed.
void Pair::issue_cts() {
  while (connected_ && next_cts_seq_ < next_recv_seq_ && next_cts_seq_ < recvs_.begin()->first + kCtsSlots) {
    Recv& r = *recvs_.at(next_cts_seq_);
    if (r.buffer.bytes > 0) r.region = host_.region_for(r.buffer, true);
    const int slot = static_cast<int>(r.seq % kCtsSlots);
    // An empty message is written nowhere, but to a valid place all the same.
    const bool empty = r.buffer.bytes == 0;
    control_->cts_out[slot] =
        CtsEntry{empty ? reinterpret_cast<uintptr_t>(control_) : reinterpret_cast<uintptr_t>(r.buffer.data),
                 r.buffer.bytes, r.tag, empty ? control_mr_->rkey : r.region.rkey(), r.seq};
    ibv_sge sge{reinterpret_cast<uintptr_t>(&control_->cts_out[slot]), sizeof(CtsEntry), control_mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = wr_id(kCts, r.seq);
    wr.sg_list = &sge;
    wr.num_sge = 1;
    // With an immediate: its completion at the sender says the entry has
    // landed whole (a plain write's bytes may be seen in any order).
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htonl(kImmCts | (r.seq & kImmSeq));
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    wr.wr.rdma.remote_addr =
        remote_.control_addr + offsetof(Control, cts_in) + static_cast<size_t>(slot) * sizeof(CtsEntry);
    wr.wr.rdma.rkey = remote_.control_rkey;
    post(0, wr);
    r.announced = true;
    ++next_cts_seq_;
  }
}

// Sends start in order, each once its receive's entry has come.
void Pair::start_sends() {
  if (!connected_) return;
  for (auto& sp : sends_) {
    Send& s = *sp;
    if (s.started) continue;
    if (s.seq > cts_arrived_) return;
    const CtsEntry cts = control_->cts_in[s.seq % kCtsSlots];
    if (cts.seq != s.seq)
      fail_pair(str_cat("rank ", self_, ": rank ", peer_, "'s clear-to-send for message ", s.seq, " says ", cts.seq),
                Code::kInternal);
    if (!check_match(s.tag, s.buffer.bytes, cts.tag, cts.bytes).empty()) {
      tell_mismatch(s);
      continue;
    }
    const std::vector<Share> parts = shares(s.buffer.bytes, static_cast<int>(qps_.size()));
    for (size_t q = 0; q < parts.size(); ++q)
      if (in_flight_[q] + static_cast<int>(parts[q].bytes / kMaxWrBytes) + 1 > kDataCap) return;
    if (s.buffer.bytes > 0) s.region = host_.region_for(s.buffer, false);
    for (size_t q = 0; q < parts.size(); ++q) {
      for (size_t at = parts[q].offset, end = parts[q].offset + parts[q].bytes;;) {
        const size_t len = std::min(kMaxWrBytes, end - at);
        const bool last = at + len == end;
        ibv_sge sge{reinterpret_cast<uintptr_t>(s.buffer.data) + at, static_cast<uint32_t>(len), s.region.lkey()};
        ibv_send_wr wr{};
        wr.wr_id = wr_id(kSendData, s.seq);
        wr.sg_list = len > 0 ? &sge : nullptr;
        wr.num_sge = len > 0 ? 1 : 0;
        wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
        wr.imm_data = htonl(kImmData | (s.seq & kImmSeq));
        wr.send_flags = IBV_SEND_SIGNALED | (len <= kInline ? IBV_SEND_INLINE : 0);
        wr.wr.rdma.remote_addr = cts.addr + at;
        wr.wr.rdma.rkey = cts.rkey;
        post(static_cast<int>(q), wr);
        ++s.wrs_left;
        at += len;
        if (last) break;
      }
    }
    s.started = true;
  }
}

// The receiver is the one to report a message that does not answer its
// receive (as over the other transports): it gets this send's tag and size
// instead of its data, and the send completes without writing anything.
void Pair::tell_mismatch(Send& s) {
  const uint64_t said[2] = {s.tag, s.buffer.bytes};
  ibv_sge sge{reinterpret_cast<uintptr_t>(said), sizeof(said), 0};
  ibv_send_wr wr{};
  wr.wr_id = wr_id(kSendData, s.seq);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(kImmMismatch | (s.seq & kImmSeq));
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  post(0, wr);
  s.wrs_left = 1;
  s.started = true;
}

void Pair::post_put(RequestId id, const Buffer& local, uint64_t remote_addr, uint32_t rkey, const uint64_t* notify) {
  OneSided& o = post_one_sided(id, local, remote_addr, rkey, IBV_WR_RDMA_WRITE, notify != nullptr);
  if (notify == nullptr) return;
  // Behind the write on the same queue pair: it lands after the bytes.
  const size_t slot = o.key % kCtsSlots;
  control_->notify_out[slot] = *notify;
  ibv_sge sge{reinterpret_cast<uintptr_t>(&control_->notify_out[slot]), 8, control_mr_->lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id(kOneSidedOp, o.key);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND_WITH_IMM;
  wr.imm_data = htonl(kImmNotify);
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  post(0, wr);
  ++o.wrs_left;
}

void Pair::post_get(RequestId id, const Buffer& local, uint64_t remote_addr, uint32_t rkey) {
  post_one_sided(id, local, remote_addr, rkey, IBV_WR_RDMA_READ, false);
}

// A put's or get's bytes, in pieces of at most 1 GiB on the first queue
// pair (so that a notification behind them lands after them).
Pair::OneSided& Pair::post_one_sided(RequestId id, const Buffer& local, uint64_t remote_addr, uint32_t rkey,
                                     ibv_wr_opcode opcode, bool notify) {
  check_failed();
  make_room(0, static_cast<int>(local.bytes / kMaxWrBytes) + 1 + (notify ? 1 : 0));
  auto o = std::make_unique<OneSided>();
  o->id = id;
  o->key = next_wr_++;
  if (local.bytes > 0) o->region = host_.region_for(local, opcode == IBV_WR_RDMA_READ);
  for (size_t at = 0;;) {
    const size_t len = std::min(kMaxWrBytes, local.bytes - at);
    ibv_sge sge{reinterpret_cast<uintptr_t>(local.data) + at, static_cast<uint32_t>(len), o->region.lkey()};
    ibv_send_wr wr{};
    wr.wr_id = wr_id(kOneSidedOp, o->key);
    wr.sg_list = len > 0 ? &sge : nullptr;
    wr.num_sge = len > 0 ? 1 : 0;
    wr.opcode = opcode;
    const bool inline_it = opcode == IBV_WR_RDMA_WRITE && len <= kInline;
    wr.send_flags = IBV_SEND_SIGNALED | (inline_it ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = remote_addr + at;
    wr.wr.rdma.rkey = rkey;
    post(0, wr);
    ++o->wrs_left;
    at += len;
    if (at >= local.bytes) break;
  }
  OneSided& out = *o;
  one_sided_[out.key] = std::move(o);
  return out;
}

void Pair::post_notification(RequestId id, uint64_t* value) {
  check_failed();
  notify_waiting_.emplace_back(id, value);
}

bool Pair::progress(std::vector<RequestId>& done) {
  if (!failed_.empty()) {
    if (!idle()) check_failed();
    return false;
  }
  const size_t before = done.size();
  done.insert(done.end(), early_.begin(), early_.end());
  early_.clear();
  ibv_wc wcs[32];
  bool moved = false;
  for (int n; (n = poll_cq(cq_, 32, wcs)) != 0;) {
    if (n < 0) fail_pair(str_cat("rank ", self_, ": ibv_poll_cq failed on the pair with rank ", peer_), Code::kSystem);
    for (int i = 0; i < n; ++i) take_completion(wcs[i], done);
    moved = true;
  }
  if (!failed_.empty() && !idle()) check_failed();  // the peer's notice
  while (!notify_waiting_.empty() && !notify_arrived_.empty()) {
    *notify_waiting_.front().second = notify_arrived_.front();
    done.push_back(notify_waiting_.front().first);
    notify_waiting_.pop_front();
    notify_arrived_.pop_front();
  }
  start_sends();
  issue_cts();
  keep_alive();
  return moved || done.size() > before;
}

void Pair::take_completion(const ibv_wc& wc, std::vector<RequestId>& done) {
  if (wc.status != IBV_WC_SUCCESS) {
    if (!failed_.empty()) check_failed();
    // A flush with nothing before it here: the queue pair was failed by the
    // device, or by what the peer's side refused.
    const std::string event = host_.device().fatal();
    const std::string first = !event.empty()
                                  ? "the device reported " + event
                                  : "none here: this side's queue pair went to the error state (an operation "
                                    "the peer refused, or a device fault: see the peer's message and dmesg)";
    fail_pair(completion_error(names_, wc.qp_num, wc.status, host_.device().verbs().wc_status_str(wc.status),
                               doing(wc.wr_id), detection_, first));
  }
  last_heard_ = std::chrono::steady_clock::now();
  const uint64_t value = value_of(wc.wr_id);
  if (kind_of(wc.wr_id) == kRecvOp) {
    const int q = static_cast<int>(value >> 16), slot = static_cast<int>(value & 0xffff);
    const uint32_t imm = ntohl(wc.imm_data);
    uint64_t payload[2] = {0, 0};
    std::memcpy(payload, control_->recv_buf[q][slot], sizeof(payload));
    ibv_sge sge{reinterpret_cast<uintptr_t>(control_->recv_buf[q][slot]), 16, control_mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = wc.wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (ib::post_recv(qps_[static_cast<size_t>(q)], &wr, &bad) != 0)
      fail_pair(str_cat("rank ", self_, ": reposting a receive to rank ", peer_, " failed"), Code::kSystem);
    if ((imm & kImmKind) == kImmNotify)
      notify_arrived_.push_back(payload[0]);
    else if ((imm & kImmKind) == kImmCts)
      ++cts_arrived_;  // in order: every one comes over the first queue pair
    else if ((imm & kImmKind) == kImmMismatch)
      take_mismatch(imm & kImmSeq, payload[0], payload[1]);
    else
      take_immediate(imm, wc, done);
    return;
  }
  for (size_t q = 0; q < qps_.size(); ++q)
    if (qps_[q]->qp_num == wc.qp_num) --in_flight_[q];
  switch (kind_of(wc.wr_id)) {
    case kSendData:
      for (auto it = sends_.begin(); it != sends_.end(); ++it) {
        if ((*it)->seq != value) continue;
        if (--(*it)->wrs_left == 0) {
          done.push_back((*it)->id);
          host_.release((*it)->region);
          sends_.erase(it);
        }
        break;
      }
      break;
    case kOneSidedOp: {
      auto it = one_sided_.find(value);
      if (it != one_sided_.end() && --it->second->wrs_left == 0) {
        done.push_back(it->second->id);
        host_.release(it->second->region);
        one_sided_.erase(it);
      }
      break;
    }
    case kKeepAliveOp:
      keepalive_out_ = false;
      break;
    default:
      break;
  }
}

void Pair::take_immediate(uint32_t imm, const ibv_wc&, std::vector<RequestId>& done) {
  if ((imm & kImmKind) == kImmNotice) {
    const Control::Notice& n = control_->notice_in;
    const std::string text(n.text, std::min<size_t>(n.bytes, kMaxNoticeBytes));
    // Like a closed connection: it fails what is pending with the peer
    // and what is posted later, not what completed before it.
    try {
      fail_with_notice(self_, str_cat("rank ", peer_, " (host ", names_.peer_host, ")"), n.code, text);
    } catch (const Error& e) {
      if (failed_.empty()) failed_ = e.what(), failed_code_ = e.code();
    }
    return;
  }
  complete_recv(imm & kImmSeq, done);
}

void Pair::take_mismatch(uint32_t seq, uint64_t tag, uint64_t bytes) {
  for (auto& [key, r] : recvs_) {
    if ((key & kImmSeq) != seq) continue;
    check_match_or_fail(self_, peer_, str_cat("rank ", peer_, " (host ", names_.peer_host, ")"), tag, bytes, r->tag,
                        r->buffer.bytes);
  }
  fail_pair(str_cat("rank ", self_, ": rank ", peer_, " answered message ", seq, ", which no receive announced"),
            Code::kInternal);
}

void Pair::complete_recv(uint32_t seq, std::vector<RequestId>& done) {
  for (auto it = recvs_.begin(); it != recvs_.end(); ++it) {
    if ((it->first & kImmSeq) != seq || !it->second->announced) continue;
    if (--it->second->imms_left == 0) {
      done.push_back(it->second->id);
      host_.release(it->second->region);
      recvs_.erase(it);
    }
    return;
  }
  fail_pair(str_cat("rank ", self_, ": rank ", peer_, " wrote message ", seq, ", which no receive announced"),
            Code::kInternal);
}

}  // namespace coll::transport::ib
