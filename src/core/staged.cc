// Communicator::run_staged: an operation on buffers the transports cannot
// move (device memory), through host slots chunk by chunk (core/staging/):
// compiled at the call as ordinary host operations on the slots, run on the
// worker, ordered on the caller's stream.
#include "core/comm.h"
#include "core/exchange_queue.h"
#include "core/staging/layout.h"
#include "core/staging/stager.h"

#include "base/config.h"

namespace coll {

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

std::shared_ptr<Completion> Communicator::run_staged(const OpRequest& op) {
  check_usable();
  auto& stager = stagers_[op.kind == MemoryKind::kHost ? 0 : 1];
  if (!stager) stager = staging::make_stager(op.kind, staging_bytes_);
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
  } catch (...) {
    // Released on the worker, after the operations before it: the gate
    // counter is written in the order the numbers were taken.
    worker_->enqueue([st, ticket] { st->leave(ticket); });
    throw;
  }
  worker_->enqueue([this, st, chunks, jobs, ticket, done] {
    const std::vector<staging::Chunk>& ch = *chunks;
    try {
      st->begin(ticket);
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
      st->leave(ticket);
      done->finish(COLL_SUCCESS, "");
    } catch (const Error& e) {
      st->leave(ticket);
      failed(e);
      done->finish(static_cast<coll_result_t>(e.code()), e.what());
    } catch (const std::exception& e) {
      st->leave(ticket);
      failed(Error(Code::kInternal, e.what()));
      done->finish(COLL_INTERNAL_ERROR, std::string("internal error: ") + e.what());
    }
  });
  return done;
}

}  // namespace coll
