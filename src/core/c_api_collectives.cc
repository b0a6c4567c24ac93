// The C ABI, second half: every operation, blocking and not, grouped or not.
// Each entry point checks its arguments (naming the argument and rank), then
// hands one OpRequest to the communicator, to the current group, or to the
// communicator's worker.
#include "core/c_api_internal.h"
#include "core/test_hooks.h"
#include "reduce/backend.h"
#include "reduce/reduce.h"

#include <coll/coll.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using coll::Code;
using coll::Communicator;
using coll::fail;
using coll::MemoryKind;
using coll::OpRequest;
using coll::algo::Collective;
using coll::capi::guarded;

void (*coll::test_hooks::ran_unstaged)(const char* call) = nullptr;

namespace {

// A call refused inside a group fails the whole group, as in NCCL: run
// without it, the group's later calls would meet the peers' instances of it
// (same signature, same counters) and reduce the wrong data.
struct Group {
  int depth = 0;
  std::vector<std::pair<coll_comm_t, OpRequest>> ops;
  coll_result_t refused = COLL_SUCCESS;  // the first refused call's result
  std::string why;                       // and its message
};
thread_local Group t_group;

// Argument checks shared by the entry points; `what` names the call.
struct Checker {
  const char* what;
  Communicator& c;

  void datatype(coll_datatype_t t) const {
    if (!coll::reduce::valid_datatype(t))
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": datatype ", static_cast<int>(t),
           " is not a coll_datatype_t");
  }
  void redop(coll_redop_t op) const {
    if (!coll::reduce::valid_redop(op))
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": op ", static_cast<int>(op),
           " is not a coll_redop_t");
  }
  // Where req's buffers live (both of one kind), and its stream: a stream
  // needs device buffers, and device buffers need a build with CUDA.
  void memory(OpRequest& req, coll_stream_t s) const {
    const bool has_send = req.send != nullptr && req.count > 0, has_recv = req.recv != nullptr && req.count > 0;
    const MemoryKind ks = has_send ? coll::reduce::memory_kind_of(req.send) : MemoryKind::kHost;
    const MemoryKind kr = has_recv ? coll::reduce::memory_kind_of(req.recv) : MemoryKind::kHost;
    const bool root_only_recv = req.collective == Collective::kReduce && c.rank() != req.root;
    if (has_send && has_recv && ks != kr && !root_only_recv)
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": sendbuf is ", coll::memory_kind_name(ks),
           " memory and recvbuf is ", coll::memory_kind_name(kr), " memory: both must be of one kind");
    req.kind = has_send ? ks : kr;
    req.stream = s;
    if (s == nullptr || req.kind == MemoryKind::kCuda) return;
#ifdef COLL_WITH_CUDA
    if (has_send || has_recv)
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(),
           ": stream is not null, but the buffers are host memory (pass a null stream with host buffers)");
#else
    fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": stream is not null, but this build has no CUDA");
#endif
  }
  void rank_arg(int r, const char* name) const {
    if (r < 0 || r >= c.nranks())
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": ", name, " ", r, " is outside [0, ", c.nranks(),
           ")");
  }
  // count * element size * blocks, refusing overflow.
  size_t bytes(size_t count, coll_datatype_t t, size_t blocks = 1) const {
    size_t es = coll::reduce::datatype_size(t);
    if (count > SIZE_MAX / es / blocks)
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": count ", count, " x ", es, " bytes",
           blocks > 1 ? " x nranks" : "", " overflows size_t");
    return count * es * blocks;
  }
  void buffer(const void* p, size_t bytes, const char* name) const {
    if (bytes > 0 && p == nullptr)
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": ", name, " is null with ", bytes, " bytes to move");
  }
  // The two ranges must be disjoint, or the input must sit at `in_place`
  // bytes from the start of the output. Returns that offset when the call
  // is in place (what the algorithms need to know), nothing when disjoint.
  std::optional<int64_t> overlap(const void* send, size_t send_bytes, const void* recv, size_t recv_bytes,
                                 int64_t in_place, const char* rule) const {
    if (send == nullptr || recv == nullptr || send_bytes == 0 || recv_bytes == 0) return std::nullopt;
    auto s = reinterpret_cast<intptr_t>(send), r = reinterpret_cast<intptr_t>(recv);
    bool disjoint = s + static_cast<intptr_t>(send_bytes) <= r || r + static_cast<intptr_t>(recv_bytes) <= s;
    if (disjoint) return std::nullopt;
    if (s - r != in_place)
      fail(Code::kInvalidArgument, what, " on rank ", c.rank(), ": sendbuf and recvbuf overlap, but not in place (",
           rule, ")");
    return in_place;
  }
};

// Validates and builds the request (`build`), then runs it now, records it
// in the current group, or queues it (request != null).
template <typename Build>
coll_result_t run_or_record(coll_comm_t comm, const char* what, coll_request_t* request, bool async, Build& build) {
  return guarded(comm, [&] {
    if (async && request == nullptr) fail(Code::kInvalidArgument, what, ": request is a null pointer");
    coll::capi::BusyGuard busy(comm);
    Communicator& c = coll::capi::usable(comm);
    OpRequest op = build(Checker{what, c});
    if (t_group.depth > 0) {
      if (async)
        fail(Code::kInvalidUsage, what, " on rank ", c.rank(),
             ": non-blocking calls are not allowed inside a group (the group is one operation: issue the calls "
             "blocking inside it, or non-blocking outside any group)");
      if (op.kind != MemoryKind::kHost)
        fail(Code::kInvalidUsage, what, " on rank ", c.rank(),
             ": device buffers inside a group are not supported yet (issue the call outside the group)");
      t_group.ops.push_back({comm, op});
      return;
    }
    if (c.stages(op)) {
      // Device buffers: returns once enqueued on the stream (as NCCL's
      // calls); a later failure comes back by coll_comm_get_async_error.
      // Host buffers staged for a test, and device buffers where the
      // stream is not held (COLL_DEVICE_HOST_SYNC): blocking.
      auto done = c.run_staged(op);
      if (async) {
        // Not held, the stream would run ahead of a request still running:
        // it completes first, and coll_wait reports how.
        if (op.kind != MemoryKind::kHost && !c.holds_device_streams(op)) done->wait();
        *request = new coll_request{comm, done};
      } else if (op.kind == MemoryKind::kHost || !c.holds_device_streams(op)) {
        if (coll_result_t result = done->wait(); result != COLL_SUCCESS)
          throw coll::Error(static_cast<Code>(result), done->message());
      }
      return;
    }
    if (coll::test_hooks::ran_unstaged) coll::test_hooks::ran_unstaged(what);
    if (async) {
      *request = new coll_request{comm, c.run_async({&op, 1})};
      return;
    }
    c.run({&op, 1});
  });
}

// A call of the API: a refusal inside a group fails the group.
template <typename Build>
coll_result_t submit(coll_comm_t comm, const char* what, coll_request_t* request, bool async, Build&& build) {
  if (async && request != nullptr) *request = nullptr;  // a refused call leaves none to wait for
  coll_result_t result = coll::capi::check_handle(comm, what);
  if (result == COLL_SUCCESS) result = run_or_record(comm, what, request, async, build);
  if (result != COLL_SUCCESS && t_group.depth > 0 && t_group.refused == COLL_SUCCESS) {
    t_group.refused = result;
    t_group.why = coll_get_last_error(comm);
  }
  return result;
}

// --- builders: check the arguments of one call, describe it ---

OpRequest allreduce_op(const Checker& k, const void* send, void* recv, size_t count, coll_datatype_t t, coll_redop_t op,
                       coll_stream_t stream) {
  k.datatype(t), k.redop(op);
  size_t b = k.bytes(count, t);
  k.buffer(send, b, "sendbuf"), k.buffer(recv, b, "recvbuf");
  OpRequest req{Collective::kAllreduce, send, recv, count, t, op};
  req.send_offset = k.overlap(send, b, recv, b, 0, "in place needs sendbuf == recvbuf");
  k.memory(req, stream);
  return req;
}

OpRequest broadcast_op(const Checker& k, void* buf, size_t count, coll_datatype_t t, int root, coll_stream_t stream) {
  k.datatype(t), k.rank_arg(root, "root");
  k.buffer(buf, k.bytes(count, t), "buf");
  OpRequest req{Collective::kBroadcast, buf, buf, count, t, COLL_SUM, root};
  req.send_offset = 0;  // one buffer
  k.memory(req, stream);
  return req;
}

OpRequest reduce_op(const Checker& k, const void* send, void* recv, size_t count, coll_datatype_t t, coll_redop_t op,
                    int root, coll_stream_t stream) {
  k.datatype(t), k.redop(op), k.rank_arg(root, "root");
  size_t b = k.bytes(count, t);
  k.buffer(send, b, "sendbuf");
  if (k.c.rank() == root) k.buffer(recv, b, "recvbuf");
  OpRequest req{Collective::kReduce, send, recv, count, t, op, root};
  req.send_offset = k.overlap(send, b, recv, b, 0, "in place needs sendbuf == recvbuf");
  k.memory(req, stream);
  return req;
}

OpRequest allgather_op(const Checker& k, const void* send, void* recv, size_t count, coll_datatype_t t,
                       coll_stream_t stream) {
  k.datatype(t);
  size_t b = k.bytes(count, t), all = k.bytes(count, t, static_cast<size_t>(k.c.nranks()));
  k.buffer(send, b, "sendbuf"), k.buffer(recv, all, "recvbuf");
  OpRequest req{Collective::kAllgather, send, recv, count, t};
  req.send_offset = k.overlap(send, b, recv, all, static_cast<int64_t>(b) * k.c.rank(),
                              "in place needs sendbuf == recvbuf + rank * sendcount");
  k.memory(req, stream);
  return req;
}

OpRequest reduce_scatter_op(const Checker& k, const void* send, void* recv, size_t count, coll_datatype_t t,
                            coll_redop_t op, coll_stream_t stream) {
  k.datatype(t), k.redop(op);
  size_t b = k.bytes(count, t), all = k.bytes(count, t, static_cast<size_t>(k.c.nranks()));
  k.buffer(send, all, "sendbuf"), k.buffer(recv, b, "recvbuf");
  OpRequest req{Collective::kReduceScatter, send, recv, count, t, op};
  req.send_offset = k.overlap(send, all, recv, b, -static_cast<int64_t>(b) * k.c.rank(),
                              "in place needs recvbuf == sendbuf + rank * recvcount");
  k.memory(req, stream);
  return req;
}

OpRequest alltoall_op(const Checker& k, const void* send, void* recv, size_t count, coll_datatype_t t,
                      coll_stream_t stream) {
  k.datatype(t);
  size_t all = k.bytes(count, t, static_cast<size_t>(k.c.nranks()));
  k.buffer(send, all, "sendbuf"), k.buffer(recv, all, "recvbuf");
  OpRequest req{Collective::kAlltoall, send, recv, count, t};
  req.send_offset = k.overlap(send, all, recv, all, 0, "in place needs sendbuf == recvbuf");
  k.memory(req, stream);
  return req;
}

OpRequest p2p_op(const Checker& k, Collective which, void* buf, size_t count, coll_datatype_t t, int peer,
                 coll_stream_t stream) {
  k.datatype(t), k.rank_arg(peer, "peer");
  k.buffer(buf, k.bytes(count, t), "buf");
  OpRequest req = which == Collective::kSend ? OpRequest{which, buf, nullptr, count, t, COLL_SUM, peer}
                                             : OpRequest{which, nullptr, buf, count, t, COLL_SUM, peer};
  k.memory(req, stream);
  return req;
}

OpRequest barrier_op(const Checker&) { return OpRequest{Collective::kBarrier}; }

coll_result_t finish_request(coll_request_t request, bool block) {
  const char* what = block ? "coll_wait" : "coll_test";
  const auto released = [&] {
    return guarded(nullptr, [&] {
      fail(Code::kInvalidUsage, what, ": the request was completed and released already (by coll_wait, or by ",
           "coll_test when it returned other than COLL_IN_PROGRESS); its handle must not be used again");
    });
  };
  if (request == nullptr)
    return guarded(nullptr, [&] { fail(Code::kInvalidArgument, what, ": request is null (a failed call's?)"); });
  if (request->state.load(std::memory_order_acquire) != coll_request::kLive) return released();
  if (!block && !request->completion->done()) return COLL_IN_PROGRESS;
  if (request->state.exchange(coll_request::kReleased) != coll_request::kLive) return released();  // another thread's
  coll_result_t result = request->completion->wait();
  if (result != COLL_SUCCESS) coll::capi::record(request->comm, request->completion->message());
  coll::capi::bury(request);  // its completion too: another thread may still be asking it (coll_test)
  return result;
}

// Nothing in a group runs where one of its calls, or its part on one of
// its communicators, was refused: every communicator's last error says so.
coll_result_t refuse_group(const std::vector<coll_comm_t>& comms, coll_result_t code, const std::string& why) {
  const std::string message = "group_end: nothing in the group ran, because " + why +
                              "; the other ranks' groups wait for this rank's until coll_comm_abort or their timeout";
  for (coll_comm_t comm : comms)
    if (comm->state.load(std::memory_order_acquire) == coll_comm::kLive) coll::capi::record(comm, message);
  coll::capi::record(nullptr, message);
  return code;
}

}  // namespace

extern "C" {

coll_result_t coll_allreduce(const void* s, void* r, size_t n, coll_datatype_t t, coll_redop_t op, coll_comm_t comm,
                             coll_stream_t st) {
  return submit(comm, "allreduce", nullptr, false,
                [&](const Checker& k) { return allreduce_op(k, s, r, n, t, op, st); });
}
coll_result_t coll_allreduce_async(const void* s, void* r, size_t n, coll_datatype_t t, coll_redop_t op,
                                   coll_comm_t comm, coll_stream_t st, coll_request_t* req) {
  return submit(comm, "allreduce", req, true, [&](const Checker& k) { return allreduce_op(k, s, r, n, t, op, st); });
}

coll_result_t coll_broadcast(void* b, size_t n, coll_datatype_t t, int root, coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "broadcast", nullptr, false,
                [&](const Checker& k) { return broadcast_op(k, b, n, t, root, st); });
}
coll_result_t coll_broadcast_async(void* b, size_t n, coll_datatype_t t, int root, coll_comm_t comm, coll_stream_t st,
                                   coll_request_t* req) {
  return submit(comm, "broadcast", req, true, [&](const Checker& k) { return broadcast_op(k, b, n, t, root, st); });
}

coll_result_t coll_reduce(const void* s, void* r, size_t n, coll_datatype_t t, coll_redop_t op, int root,
                          coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "reduce", nullptr, false,
                [&](const Checker& k) { return reduce_op(k, s, r, n, t, op, root, st); });
}
coll_result_t coll_reduce_async(const void* s, void* r, size_t n, coll_datatype_t t, coll_redop_t op, int root,
                                coll_comm_t comm, coll_stream_t st, coll_request_t* req) {
  return submit(comm, "reduce", req, true, [&](const Checker& k) { return reduce_op(k, s, r, n, t, op, root, st); });
}

coll_result_t coll_allgather(const void* s, void* r, size_t n, coll_datatype_t t, coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "allgather", nullptr, false, [&](const Checker& k) { return allgather_op(k, s, r, n, t, st); });
}
coll_result_t coll_allgather_async(const void* s, void* r, size_t n, coll_datatype_t t, coll_comm_t comm,
                                   coll_stream_t st, coll_request_t* req) {
  return submit(comm, "allgather", req, true, [&](const Checker& k) { return allgather_op(k, s, r, n, t, st); });
}

coll_result_t coll_reduce_scatter(const void* s, void* r, size_t n, coll_datatype_t t, coll_redop_t op,
                                  coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "reduce_scatter", nullptr, false,
                [&](const Checker& k) { return reduce_scatter_op(k, s, r, n, t, op, st); });
}
coll_result_t coll_reduce_scatter_async(const void* s, void* r, size_t n, coll_datatype_t t, coll_redop_t op,
                                        coll_comm_t comm, coll_stream_t st, coll_request_t* req) {
  return submit(comm, "reduce_scatter", req, true,
                [&](const Checker& k) { return reduce_scatter_op(k, s, r, n, t, op, st); });
}

coll_result_t coll_alltoall(const void* s, void* r, size_t n, coll_datatype_t t, coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "alltoall", nullptr, false, [&](const Checker& k) { return alltoall_op(k, s, r, n, t, st); });
}
coll_result_t coll_alltoall_async(const void* s, void* r, size_t n, coll_datatype_t t, coll_comm_t comm,
                                  coll_stream_t st, coll_request_t* req) {
  return submit(comm, "alltoall", req, true, [&](const Checker& k) { return alltoall_op(k, s, r, n, t, st); });
}

coll_result_t coll_send(const void* b, size_t n, coll_datatype_t t, int peer, coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "send", nullptr, false,
                [&](const Checker& k) { return p2p_op(k, Collective::kSend, const_cast<void*>(b), n, t, peer, st); });
}
coll_result_t coll_send_async(const void* b, size_t n, coll_datatype_t t, int peer, coll_comm_t comm, coll_stream_t st,
                              coll_request_t* req) {
  return submit(comm, "send", req, true,
                [&](const Checker& k) { return p2p_op(k, Collective::kSend, const_cast<void*>(b), n, t, peer, st); });
}

coll_result_t coll_recv(void* b, size_t n, coll_datatype_t t, int peer, coll_comm_t comm, coll_stream_t st) {
  return submit(comm, "recv", nullptr, false,
                [&](const Checker& k) { return p2p_op(k, Collective::kRecv, b, n, t, peer, st); });
}
coll_result_t coll_recv_async(void* b, size_t n, coll_datatype_t t, int peer, coll_comm_t comm, coll_stream_t st,
                              coll_request_t* req) {
  return submit(comm, "recv", req, true,
                [&](const Checker& k) { return p2p_op(k, Collective::kRecv, b, n, t, peer, st); });
}

coll_result_t coll_barrier(coll_comm_t comm) { return submit(comm, "barrier", nullptr, false, barrier_op); }
coll_result_t coll_barrier_async(coll_comm_t comm, coll_request_t* req) {
  return submit(comm, "barrier", req, true, barrier_op);
}

coll_result_t coll_group_start(void) {
  ++t_group.depth;
  return COLL_SUCCESS;
}

coll_result_t coll_group_end(void) {
  if (t_group.depth == 0) return guarded(nullptr, [] { fail(Code::kInvalidUsage, "group_end without group_start"); });
  if (--t_group.depth > 0) return COLL_SUCCESS;
  auto ops = std::move(t_group.ops);
  t_group.ops.clear();
  // One batch per communicator, in the order each first appeared.
  std::vector<coll_comm_t> comms;
  for (const auto& [comm, op] : ops)
    if (std::find(comms.begin(), comms.end(), comm) == comms.end()) comms.push_back(comm);
  if (const coll_result_t refused = std::exchange(t_group.refused, COLL_SUCCESS); refused != COLL_SUCCESS)
    return refuse_group(comms, refused, "a call in it was refused (" + std::exchange(t_group.why, {}) + ")");
  const auto batch_of = [&ops](coll_comm_t comm) {
    std::vector<OpRequest> batch;
    for (const auto& [c, op] : ops)
      if (c == comm) batch.push_back(op);
    return batch;
  };
  // Each communicator is taken and checked (destroyed inside the group?)
  // before any batch starts.
  coll_result_t first = COLL_SUCCESS;
  std::vector<std::unique_ptr<coll::capi::BusyGuard>> held;
  for (coll_comm_t comm : comms) {
    first = coll::capi::check_handle(comm, "group_end");
    if (first == COLL_SUCCESS)
      first = guarded(comm, [&] {
        held.push_back(std::make_unique<coll::capi::BusyGuard>(comm));
        coll::capi::usable(comm);
      });
    if (first != COLL_SUCCESS) return first;
  }
  if (comms.size() == 1)  // run here, as a blocking call does
    return guarded(comms[0], [&] { comms[0]->impl->run(batch_of(comms[0]), true); });
  // Several communicators: every batch is compiled before any starts (a
  // refused one runs none, as a refused call does), and every batch starts
  // on its communicator's worker before any is waited for, so that ranks may
  // group them in any order.
  std::vector<coll::Communicator::Batch> batches;
  for (coll_comm_t comm : comms)
    if (const coll_result_t r = guarded(comm, [&] { batches.push_back(comm->impl->prepare(batch_of(comm), true)); });
        r != COLL_SUCCESS)
      return refuse_group(comms, r,
                          "its part on one communicator was refused (" + std::string(coll_get_last_error(comm)) + ")");
  std::vector<std::pair<coll_comm_t, std::shared_ptr<coll::Completion>>> started;
  for (size_t i = 0; i < comms.size(); ++i) {
    const coll_result_t r =
        guarded(comms[i], [&] { started.emplace_back(comms[i], comms[i]->impl->start(batches[i])); });
    if (first == COLL_SUCCESS) first = r;
  }
  for (const auto& [comm, done] : started) {
    const coll_result_t r = done->wait();
    if (r != COLL_SUCCESS) coll::capi::record(comm, done->message());
    if (first == COLL_SUCCESS) first = r;
  }
  return first;
}

coll_result_t coll_wait(coll_request_t request) { return finish_request(request, true); }
coll_result_t coll_test(coll_request_t request) { return finish_request(request, false); }

}  // extern "C"
