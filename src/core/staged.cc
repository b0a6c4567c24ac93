// Communicator::run_staged: an operation on device buffers, ordered on the
// caller's stream and run on the worker. Where a transport that moves GPU
// memory reaches every peer (nvlink), it runs on the buffers in place
// (run_direct); otherwise through host slots chunk by chunk
// (core/staging/), compiled at the call as ordinary host operations on the
// slots.
#include "core/comm.h"
#include "core/exchange_queue.h"
#include "core/staging/layout.h"
#include "core/staging/stager.h"
#include "core/test_hooks.h"

#include "base/config.h"

namespace coll {

void (*test_hooks::staged_through_slots)() = nullptr;

bool Communicator::stages(const OpRequest& op) const {
  if (op.collective == algo::Collective::kBarrier) return false;
  if (algo::is_point_to_point(op.collective)) {
    // Staged one after another on the worker, a send and a receive that
    // each rank posts before waiting would wait for each other forever:
    // sends and receives need the exchanges' pairing (exchanges.cc) first.
    if (op.kind != MemoryKind::kHost)
      fail(Code::kInvalidUsage, algo::collective_name(op.collective), " on rank ", rank_,
           ": device buffers in send and receive are not supported yet (copy to host memory first)");
    return false;
  }
  return op.kind != MemoryKind::kHost || stage_host_buffers_;
}

// The worker's side of an operation on a stream: waits for the stream's
// earlier work, runs `body`, then lets the stream go on and finishes
// `done`, however the body ends.
void Communicator::on_stream(staging::Stager& st, const staging::Ticket& ticket, Completion& done,
                             const std::function<void()>& body) {
  try {
    st.begin(ticket);
    body();
    st.leave(ticket);
    done.finish(COLL_SUCCESS, "");
  } catch (const Error& e) {
    st.leave(ticket);
    failed(e);
    done.finish(static_cast<coll_result_t>(e.code()), e.what());
  } catch (const std::exception& e) {
    st.leave(ticket);
    failed(Error(Code::kInternal, e.what()));
    done.finish(COLL_INTERNAL_ERROR, std::string("internal error: ") + e.what());
  }
}

bool Communicator::holds_device_streams(const OpRequest& op) const {
  const auto& stager = stagers_[op.kind == MemoryKind::kHost ? 0 : 1];
  return stager != nullptr && stager->holds_streams();
}

bool Communicator::moves_device_directly() {
  if (direct_device_ < 0) {  // asked once: the addresses and transports do not change
    direct_device_ = 1;
    for (int r = 0; r < nranks_; ++r)
      if (r != rank_ && !transport_->moves_device_to(r, addresses_[static_cast<size_t>(r)])) direct_device_ = 0;
  }
  return direct_device_ == 1;
}

std::shared_ptr<Completion> Communicator::run_staged(const OpRequest& op) {
  check_usable();
  auto& stager = stagers_[op.kind == MemoryKind::kHost ? 0 : 1];
  if (!stager) stager = staging::make_stager(op.kind, staging_bytes_, timeout_ms_);
  if (op.kind != MemoryKind::kHost && moves_device_directly()) return run_direct(op, *stager);
  staging::Stager* st = stager.get();
  const staging::Ticket ticket = st->enter(op.stream, op.send != nullptr ? op.send : op.recv);
  auto chunks = std::make_shared<std::vector<staging::Chunk>>();
  auto jobs = std::make_shared<std::vector<std::vector<Job>>>();
  auto done = std::make_shared<Completion>();
  if (!worker_) worker_ = std::make_unique<Worker>();
  try {
    *chunks = staging::chunks_of(op, rank_, nranks_, st->slots());
    jobs->resize(chunks->size());
    // A lone send or receive is compiled as a group of one: the worker runs it in place.
    const bool p2p = algo::is_point_to_point(op.collective);
    for (size_t k = 0; k < chunks->size(); ++k) compile({&(*chunks)[k].host, 1}, (*jobs)[k], p2p);
    exchanges_->close();
    if (test_hooks::staged_through_slots) test_hooks::staged_through_slots();
  } catch (...) {
    // Released on the worker, after the operations before it: the gate
    // counter is written in the order the numbers were taken.
    worker_->enqueue([st, ticket] { st->leave(ticket); });
    throw;
  }
  worker_->enqueue([this, st, chunks, jobs, ticket, done] {
    const std::vector<staging::Chunk>& ch = *chunks;
    on_stream(*st, ticket, *done, [&] {
      if (ch[0].in) st->copy(0, true, *ch[0].in);
      for (size_t k = 0; k < ch.size(); ++k) {
        const int s = ch[k].slot;
        if (k + 1 < ch.size() && ch[k + 1].in) st->copy(1 - s, true, *ch[k + 1].in);  // the next chunk comes in
        st->wait(s, true);                                                            // this chunk is in
        st->wait(s, false);  // the chunk before last has left this slot
        if (!(*jobs)[k].empty()) execute((*jobs)[k]);
        if (ch[k].out) st->copy(s, false, *ch[k].out);
      }
      st->wait(0, false);
      st->wait(1, false);
    });
  });
  return done;
}

// The operation's own buffers, moved by the transports and reduced by the
// device's kernels on the stager's work stream, which every step waits for
// before a transport reads what it wrote (executor.cc).
std::shared_ptr<Completion> Communicator::run_direct(const OpRequest& op, staging::Stager& stager) {
  staging::Stager* st = &stager;
  const staging::Ticket ticket = st->enter(op.stream, op.send != nullptr ? op.send : op.recv);
  auto jobs = std::make_shared<std::vector<Job>>();
  auto done = std::make_shared<Completion>();
  if (!worker_) worker_ = std::make_unique<Worker>();
  try {
    compile({&op, 1}, *jobs);
    for (Job& j : *jobs) j.stream = st->work_stream();
    exchanges_->close();
  } catch (...) {
    worker_->enqueue([st, ticket] { st->leave(ticket); });
    throw;
  }
  worker_->enqueue([this, st, jobs, ticket, done] { on_stream(*st, ticket, *done, [&] { execute(*jobs); }); });
  return done;
}

}  // namespace coll
