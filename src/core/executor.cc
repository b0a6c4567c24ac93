#include "core/executor.h"

#include "core/error.h"
#include "core/log.h"
#include "reduce/reduce.h"

#include <algorithm>
#include <cstring>

namespace coll {

using algo::BufferId;
using algo::OpKind;
using algo::Step;

namespace {

// Receives that may hold a staging buffer at once: enough to keep the
// pipeline full, bounded so memory stays at a few chunks.
constexpr size_t kMaxStaged = 8;

bool is_local(OpKind k) { return k == OpKind::kCopy || k == OpKind::kReduce || k == OpKind::kDivide; }

}  // namespace

// Numbers the batch's steps globally (job j's step i is base + i), counts
// each step's unfinished dependencies, lists its dependents and files the
// transfers into per-peer channels.
void Executor::prepare(std::vector<Job>& jobs, int nranks) {
  steps_.clear();
  job_of_.clear();
  base_.clear();
  for (uint32_t j = 0; j < jobs.size(); ++j) {
    base_.push_back(static_cast<uint32_t>(steps_.size()));
    for (const Step& s : jobs[j].plan->schedule.steps) {
      steps_.push_back(&s);
      job_of_.push_back(j);
    }
  }
  const size_t n = steps_.size();
  waiting_.assign(n, 0);
  dependents_start_.assign(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t d : steps_[i]->deps) ++dependents_start_[base_[job_of_[i]] + d + 1];
  for (size_t i = 0; i < n; ++i) dependents_start_[i + 1] += dependents_start_[i];
  dependents_.resize(dependents_start_[n]);
  fill_.assign(dependents_start_.begin(), dependents_start_.end() - 1);
  if (sends_.size() < static_cast<size_t>(nranks)) sends_.resize(static_cast<size_t>(nranks));
  if (recvs_.size() < static_cast<size_t>(nranks)) recvs_.resize(static_cast<size_t>(nranks));
  for (int p : send_peers_) sends_[static_cast<size_t>(p)].steps.clear(), sends_[static_cast<size_t>(p)].next = 0;
  for (int p : recv_peers_) recvs_[static_cast<size_t>(p)].steps.clear(), recvs_[static_cast<size_t>(p)].next = 0;
  send_peers_.clear();
  recv_peers_.clear();
  local_.clear();
  max_staged_bytes_ = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Step& s = *steps_[i];
    waiting_[i] = static_cast<uint32_t>(s.deps.size());
    for (uint32_t d : s.deps) dependents_[fill_[base_[job_of_[i]] + d]++] = i;
    const auto peer = static_cast<size_t>(s.peer);
    if (s.kind == OpKind::kSend) {
      if (sends_[peer].steps.empty()) send_peers_.push_back(s.peer);
      sends_[peer].steps.push_back(i);
    }
    if (s.kind == OpKind::kRecv || s.kind == OpKind::kRecvReduce) {
      if (recvs_[peer].steps.empty()) recv_peers_.push_back(s.peer);
      recvs_[peer].steps.push_back(i);
    }
    if (s.kind == OpKind::kRecvReduce) max_staged_bytes_ = std::max(max_staged_bytes_, s.bytes);
    if (waiting_[i] == 0 && is_local(s.kind)) local_.push_back(i);
  }
}

void Executor::run(std::vector<Job>& jobs, int rank, int nranks, uint64_t seq, ChannelCounters& counters,
                   transport::Transport& transport, const Deadline& deadline) {
  prepare(jobs, nranks);
  const size_t n = steps_.size();
  if (n == 0) return;

  if (scratch_.size() < jobs.size()) scratch_.resize(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j)
    if (scratch_[j].size() < jobs[j].plan->schedule.scratch_bytes)
      scratch_[j].resize(jobs[j].plan->schedule.scratch_bytes);
  if (staging_.size() < kMaxStaged) staging_.resize(kMaxStaged);
  free_slots_.clear();
  for (size_t i = 0; i < kMaxStaged; ++i) {
    if (max_staged_bytes_ > 0 && staging_[i].size() < max_staged_bytes_) staging_[i].resize(max_staged_bytes_);
    free_slots_.push_back(kMaxStaged - 1 - i);
  }
  slot_of_.assign(n, SIZE_MAX);
  in_flight_.clear();

  auto address = [&](uint32_t i, const algo::Region& r) -> std::byte* {
    const Job& job = jobs[job_of_[i]];
    void* b = r.buffer == BufferId::kSend   ? const_cast<void*>(job.send)
              : r.buffer == BufferId::kRecv ? job.recv
                                            : static_cast<void*>(scratch_[job_of_[i]].data());
    return static_cast<std::byte*>(b) + r.offset;
  };
  const auto elems = [&](uint32_t i) { return steps_[i]->bytes / jobs[job_of_[i]].plan->schedule.elem_size; };

  size_t completed = 0;
  auto finish = [&](uint32_t i) {
    ++completed;
    for (uint32_t k = dependents_start_[i]; k < dependents_start_[i + 1]; ++k) {
      uint32_t d = dependents_[k];
      if (--waiting_[d] == 0 && is_local(steps_[d]->kind)) local_.push_back(d);
    }
  };

  // Posts every channel head whose dependencies are done.
  auto post_ready = [&] {
    for (int peer : send_peers_) {
      Channel& ch = sends_[static_cast<size_t>(peer)];
      while (ch.next < ch.steps.size() && waiting_[ch.steps[ch.next]] == 0) {
        uint32_t i = ch.steps[ch.next++];
        in_flight_.emplace_back(
            transport.post_send(peer, address(i, steps_[i]->src), steps_[i]->bytes, counters.sent[peer]++), i);
      }
    }
    for (int peer : recv_peers_) {
      Channel& ch = recvs_[static_cast<size_t>(peer)];
      while (ch.next < ch.steps.size() && waiting_[ch.steps[ch.next]] == 0) {
        uint32_t i = ch.steps[ch.next];
        void* into;
        if (steps_[i]->kind == OpKind::kRecvReduce) {
          if (free_slots_.empty()) break;
          slot_of_[i] = free_slots_.back();
          free_slots_.pop_back();
          into = staging_[slot_of_[i]].data();
        } else {
          into = address(i, steps_[i]->dst);
        }
        ++ch.next;
        in_flight_.emplace_back(transport.post_recv(peer, into, steps_[i]->bytes, counters.received[peer]++), i);
      }
    }
  };
  // The step a completed request belongs to. Requests are kept in posting
  // order and mostly complete in it, so the search starts at the oldest one
  // still in flight (a broadcast may post thousands of receives at once; a
  // hash map would allocate per request). Finished entries become holes.
  constexpr uint32_t kHole = UINT32_MAX;
  size_t oldest = 0;
  auto take = [&](transport::RequestId id) {
    size_t k = oldest;
    while (k < in_flight_.size() && (in_flight_[k].second == kHole || in_flight_[k].first != id)) ++k;
    if (k == in_flight_.size()) fail(Code::kInternal, "rank ", rank, ": unknown request ", id, " completed");
    uint32_t i = in_flight_[k].second;
    in_flight_[k].second = kHole;
    while (oldest < in_flight_.size() && in_flight_[oldest].second == kHole) ++oldest;
    if (oldest == in_flight_.size()) in_flight_.clear(), oldest = 0;
    return i;
  };

  while (completed < n) {
    while (!local_.empty()) {
      uint32_t i = local_.back();
      local_.pop_back();
      const Step& s = *steps_[i];
      const Job& job = jobs[job_of_[i]];
      if (s.kind == OpKind::kCopy)
        std::memmove(address(i, s.dst), address(i, s.src), s.bytes);
      else if (s.kind == OpKind::kReduce)
        reduce::reduce(job.dtype, job.op, address(i, s.dst), address(i, s.dst), address(i, s.src), elems(i));
      else
        reduce::divide(job.dtype, address(i, s.dst), elems(i), nranks);
      finish(i);
    }
    post_ready();
    if (completed == n) break;
    if (oldest == in_flight_.size() && local_.empty())  // nothing can ever move: a schedule bug, not a slow peer
      fail(Code::kInternal, "rank ", rank, ": ", jobs[0].what, " #", seq, " (", jobs[0].plan->schedule.algorithm,
           ") stalled with ", n - completed, " of ", n, " steps unfinished and nothing in flight");

    done_.clear();
    transport.poll(done_, local_.empty() ? deadline.remaining_ms(100) : 0);
    for (transport::RequestId id : done_) {
      uint32_t i = take(id);
      const Step& s = *steps_[i];
      if (s.kind == OpKind::kRecvReduce) {
        const Job& job = jobs[job_of_[i]];
        reduce::reduce(job.dtype, job.op, address(i, s.dst), address(i, s.src), staging_[slot_of_[i]].data(), elems(i));
        free_slots_.push_back(slot_of_[i]);
      }
      finish(i);
    }
    if (done_.empty() && deadline.expired()) {
      std::string pending;
      for (const auto* peers : {&send_peers_, &recv_peers_})
        for (int peer : *peers) {
          std::string p = transport.pending_with(peer);
          if (!p.empty() && pending.find(p) == std::string::npos) pending += (pending.empty() ? "" : "; ") + p;
        }
      fail(Code::kTimeout, "rank ", rank, ": ", jobs[0].what, " #", seq, " (", jobs[0].plan->schedule.algorithm,
           ") timed out after ", deadline.budget_ms(), " ms (COLL_TIMEOUT_MS) with ", n - completed, " of ", n,
           " steps unfinished; pending: ", pending.empty() ? "nothing posted" : pending);
    }
  }
}

}  // namespace coll
