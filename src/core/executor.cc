#include "core/executor.h"

#include "core/error.h"
#include "core/log.h"
#include "reduce/reduce.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace coll {

using algo::BufferId;
using algo::OpKind;
using algo::Step;

namespace {

// Receives that may hold a staging buffer at once: enough to keep the
// pipeline full, bounded so memory stays at a few chunks.
constexpr size_t kMaxStaged = 8;

struct Channel {
  std::vector<uint32_t> steps;  // global step indices, program order
  size_t next = 0;              // first not yet posted
};

bool is_local(OpKind k) { return k == OpKind::kCopy || k == OpKind::kReduce || k == OpKind::kDivide; }

}  // namespace

void Executor::run(std::vector<Job>& jobs, int rank, int nranks, uint64_t seq, ChannelCounters& counters,
                   transport::Transport& transport, const Deadline& deadline) {
  // Global numbering: job j's step i is base[j] + i.
  std::vector<uint32_t> base;
  std::vector<const Step*> steps;
  std::vector<uint32_t> job_of;
  for (uint32_t j = 0; j < jobs.size(); ++j) {
    base.push_back(static_cast<uint32_t>(steps.size()));
    for (const Step& s : jobs[j].schedule.steps) {
      steps.push_back(&s);
      job_of.push_back(j);
    }
  }
  const size_t n = steps.size();
  if (n == 0) return;

  if (scratch_.size() < jobs.size()) scratch_.resize(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j)
    if (scratch_[j].size() < jobs[j].schedule.scratch_bytes) scratch_[j].resize(jobs[j].schedule.scratch_bytes);

  auto address = [&](uint32_t i, const algo::Region& r) -> std::byte* {
    const Job& job = jobs[job_of[i]];
    void* b = r.buffer == BufferId::kSend   ? const_cast<void*>(job.send)
              : r.buffer == BufferId::kRecv ? job.recv
                                            : static_cast<void*>(scratch_[job_of[i]].data());
    return static_cast<std::byte*>(b) + r.offset;
  };

  std::vector<uint32_t> waiting(n, 0);
  std::vector<std::vector<uint32_t>> dependents(n);
  std::map<int, Channel> sends, recvs;
  std::vector<uint32_t> local;  // copy / reduce / divide steps ready to run
  size_t max_staged_bytes = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const Step& s = *steps[i];
    waiting[i] = static_cast<uint32_t>(s.deps.size());
    for (uint32_t d : s.deps) dependents[base[job_of[i]] + d].push_back(i);
    if (s.kind == OpKind::kSend) sends[s.peer].steps.push_back(i);
    if (s.kind == OpKind::kRecv || s.kind == OpKind::kRecvReduce) recvs[s.peer].steps.push_back(i);
    if (s.kind == OpKind::kRecvReduce) max_staged_bytes = std::max(max_staged_bytes, s.bytes);
    if (waiting[i] == 0 && is_local(s.kind)) local.push_back(i);
  }
  if (staging_.size() < kMaxStaged) staging_.resize(kMaxStaged);
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < kMaxStaged; ++i) {
    if (staging_[i].size() < max_staged_bytes) staging_[i].resize(max_staged_bytes);
    free_slots.push_back(kMaxStaged - 1 - i);
  }

  std::unordered_map<transport::RequestId, uint32_t> in_flight;
  std::vector<size_t> slot_of(n, SIZE_MAX);
  size_t completed = 0;

  auto finish = [&](uint32_t i) {
    ++completed;
    for (uint32_t d : dependents[i])
      if (--waiting[d] == 0 && is_local(steps[d]->kind)) local.push_back(d);
  };

  // Posts every channel head whose dependencies are done.
  auto post_ready = [&] {
    for (auto& [peer, ch] : sends) {
      while (ch.next < ch.steps.size() && waiting[ch.steps[ch.next]] == 0) {
        uint32_t i = ch.steps[ch.next++];
        in_flight[transport.post_send(peer, address(i, steps[i]->src), steps[i]->bytes, counters.sent[peer]++)] = i;
      }
    }
    for (auto& [peer, ch] : recvs) {
      while (ch.next < ch.steps.size() && waiting[ch.steps[ch.next]] == 0) {
        uint32_t i = ch.steps[ch.next];
        void* into;
        if (steps[i]->kind == OpKind::kRecvReduce) {
          if (free_slots.empty()) break;
          slot_of[i] = free_slots.back();
          free_slots.pop_back();
          into = staging_[slot_of[i]].data();
        } else {
          into = address(i, steps[i]->dst);
        }
        ++ch.next;
        in_flight[transport.post_recv(peer, into, steps[i]->bytes, counters.received[peer]++)] = i;
      }
    }
  };

  std::vector<transport::RequestId> done;
  while (completed < n) {
    while (!local.empty()) {
      uint32_t i = local.back();
      local.pop_back();
      const Step& s = *steps[i];
      const Job& job = jobs[job_of[i]];
      const size_t elems = s.bytes / jobs[job_of[i]].schedule.elem_size;
      if (s.kind == OpKind::kCopy)
        std::memmove(address(i, s.dst), address(i, s.src), s.bytes);
      else if (s.kind == OpKind::kReduce)
        reduce::reduce(job.dtype, job.op, address(i, s.dst), address(i, s.dst), address(i, s.src), elems);
      else
        reduce::divide(job.dtype, address(i, s.dst), elems, nranks);
      finish(i);
    }
    post_ready();
    if (completed == n) break;
    if (in_flight.empty() && local.empty())  // nothing can ever move: a schedule bug, not a slow peer
      fail(Code::kInternal, "rank ", rank, ": ", jobs[0].what, " #", seq, " (", jobs[0].schedule.algorithm,
           ") stalled with ", n - completed, " of ", n, " steps unfinished and nothing in flight");

    done.clear();
    transport.poll(done, local.empty() ? deadline.remaining_ms(100) : 0);
    for (transport::RequestId id : done) {
      uint32_t i = in_flight.at(id);
      in_flight.erase(id);
      const Step& s = *steps[i];
      if (s.kind == OpKind::kRecvReduce) {
        const Job& job = jobs[job_of[i]];
        reduce::reduce(job.dtype, job.op, address(i, s.dst), address(i, s.src), staging_[slot_of[i]].data(),
                       s.bytes / job.schedule.elem_size);
        free_slots.push_back(slot_of[i]);
      }
      finish(i);
    }
    if (done.empty() && deadline.expired()) {
      std::string pending;
      for (const auto* channels : {&sends, &recvs})
        for (const auto& [peer, ch] : *channels) {
          (void)ch;
          std::string p = transport.pending_with(peer);
          if (!p.empty() && pending.find(p) == std::string::npos) pending += (pending.empty() ? "" : "; ") + p;
        }
      fail(Code::kTimeout, "rank ", rank, ": ", jobs[0].what, " #", seq, " (", jobs[0].schedule.algorithm,
           ") timed out after ", deadline.budget_ms(), " ms (COLL_TIMEOUT_MS) with ", n - completed, " of ", n,
           " steps unfinished; pending: ", pending.empty() ? "nothing posted" : pending);
    }
  }
}

}  // namespace coll
