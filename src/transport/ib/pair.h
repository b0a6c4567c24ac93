// One connection of the ib transport: reliable-connected queue pairs to one
// peer, and the protocol over them.
//
// Two-sided messages go by RDMA WRITE, never into a receive posted too late:
// the receiver writes a clear-to-send entry {address, size, rkey, tag,
// sequence} into a ring in the sender's control area (as NCCL's FIFO), with
// an immediate, so that the sender reads it only once it has landed whole; the
// sender writes the data straight into the receiver's buffer, split across
// the queue pairs in 128-byte-aligned shares, each share ending with RDMA
// WRITE WITH IMMEDIATE whose immediate names the message. Receives posted
// in advance only ever take immediates, notifications and notices, never
// data, so none is ever too late. A put is an RDMA WRITE, its notification
// a SEND WITH IMMEDIATE behind it on the same queue pair; a get is an RDMA
// READ.
#pragma once

#include "transport/ib/completion_error.h"
#include "transport/ib/device.h"
#include "transport/ib/qp_attrs.h"
#include "transport/transport.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace coll::transport::ib {

// How a message of `bytes` is shared out among `qps` queue pairs: shares
// of whole 128-byte blocks, from 128 KiB up; the count of shares is what
// the receiver waits for. Both ends compute it alike.
struct Share {
  size_t offset = 0, bytes = 0;
};
std::vector<Share> shares(size_t bytes, int qps);

// A registered range and its keys (a memory region).
struct Region {
  ibv_mr* mr = nullptr;  // owned when `owned`
  bool owned = false;
  uint32_t lkey() const { return mr ? mr->lkey : 0; }
  uint32_t rkey() const { return mr ? mr->rkey : 0; }
};

// What the pair needs of its transport: the device, and the region of a
// buffer (the user's registration covering it, or one made for this call).
class PairHost {
 public:
  virtual ~PairHost() = default;
  virtual Device& device() = 0;
  virtual Region region_for(const Buffer& buffer, bool remote_write) = 0;
  virtual void release(Region& region) = 0;
};

class Pair {
 public:
  Pair(PairHost& host, int self, int peer, std::string peer_host, int nqps, const QpSettings& settings);
  ~Pair();
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;

  // This end's connection data, then the peer's: the queue pairs go to
  // ready-to-send.
  PairEnd local_end() const;
  void connect(const PairEnd& remote);

  void post_send(RequestId id, const Buffer& buffer, uint64_t tag);
  void post_recv(RequestId id, const Buffer& buffer, uint64_t tag);
  void post_put(RequestId id, const Buffer& local, uint64_t remote_addr, uint32_t rkey, const uint64_t* notify);
  void post_get(RequestId id, const Buffer& local, uint64_t remote_addr, uint32_t rkey);
  void post_notification(RequestId id, uint64_t* value);

  // Moves what can move; appends completed requests. Throws kRemote (or
  // the peer's notice) once the pair has failed, every time after too.
  bool progress(std::vector<RequestId>& done);
  // A fatal event from the device on this pair's queue pairs, or its port.
  void fail_by_event(const std::string& event);
  bool owns_qp(uint32_t qpn) const;
  bool idle() const;
  std::string describe_pending() const;
  // Tells the peer why this rank stops (or that it closed), waiting a
  // little for the words to leave.
  void close(const Error* why);

 private:
  struct Send;
  struct Recv;
  struct OneSided;
  void post(int qp, ibv_send_wr& wr);
  void make_room(int qp, int wrs);
  OneSided& post_one_sided(RequestId id, const Buffer& local, uint64_t remote_addr, uint32_t rkey, ibv_wr_opcode opcode,
                           bool notify);
  void start_sends();
  void tell_mismatch(Send& s);
  void take_mismatch(uint32_t seq, uint64_t tag, uint64_t bytes);
  void issue_cts();
  void take_completion(const ibv_wc& wc, std::vector<RequestId>& done);
  void take_immediate(uint32_t imm, const ibv_wc& wc, std::vector<RequestId>& done);
  void complete_recv(uint32_t seq, std::vector<RequestId>& done);
  void keep_alive();
  [[noreturn]] void fail_pair(const std::string& message, Code code = Code::kRemote);
  void check_failed() const;
  const char* doing(uint64_t wr_id) const;

  PairHost& host_;
  int self_, peer_;
  PairNames names_;
  QpSettings settings_;
  std::string detection_;
  ibv_cq* cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  std::vector<uint32_t> psns_;
  std::vector<int> in_flight_;  // send work requests outstanding per queue pair
  struct Control;
  Control* control_ = nullptr;  // page-aligned, registered
  ibv_mr* control_mr_ = nullptr;
  PairEnd remote_;
  bool connected_ = false;

  uint32_t next_send_seq_ = 1, next_recv_seq_ = 1, next_cts_seq_ = 1;
  uint32_t cts_arrived_ = 0;                 // the peer's receives announced to us so far
  std::deque<std::unique_ptr<Send>> sends_;  // in order; the front ones are writing
  std::map<uint32_t, std::unique_ptr<Recv>> recvs_;
  std::map<uint64_t, std::unique_ptr<OneSided>> one_sided_;  // by work request id
  std::deque<std::pair<RequestId, uint64_t*>> notify_waiting_;
  std::deque<uint64_t> notify_arrived_;
  uint64_t next_wr_ = 1;
  std::vector<RequestId> early_;  // completed while making room

  std::chrono::steady_clock::time_point last_heard_;
  bool keepalive_out_ = false;
  Code failed_code_ = Code::kRemote;
  std::string failed_;  // the first error; every later call fails with it
};

}  // namespace coll::transport::ib
