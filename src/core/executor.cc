#include "core/executor.h"

#include "core/error.h"
#include "core/log.h"
#include "reduce/reduce.h"

#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

namespace coll {

using algo::BufferId;
using algo::OpKind;
using algo::Step;

namespace {

// Receives that may hold a staging buffer at once: enough to keep the
// pipeline full, bounded so memory stays at a few chunks.
constexpr size_t kMaxStaged = 8;

// Tags carry the collective's sequence number and the message's index on its
// channel, so that a message from another collective is caught, not reduced.
uint64_t make_tag(uint64_t seq, uint64_t index) { return (seq << 24) | (index & 0xffffff); }

struct Channel {
  std::vector<uint32_t> steps;  // program order
  size_t next = 0;              // first not yet posted
};

}  // namespace

void Executor::run(const algo::Schedule& schedule, const ExecArgs& args, transport::Transport& transport,
                   const Deadline& deadline) {
  const auto& steps = schedule.steps;
  const size_t n = steps.size();
  if (n == 0) return;
  const size_t elem = schedule.elem_size;

  auto address = [&](const algo::Region& r) -> std::byte* {
    const void* base = r.buffer == BufferId::kSend ? args.send : args.recv;
    return static_cast<std::byte*>(const_cast<void*>(base)) + r.offset;
  };

  // Dependency counts and reverse edges.
  std::vector<uint32_t> waiting(n, 0);
  std::vector<std::vector<uint32_t>> dependents(n);
  for (uint32_t i = 0; i < n; ++i) {
    waiting[i] = static_cast<uint32_t>(steps[i].deps.size());
    for (uint32_t d : steps[i].deps) dependents[d].push_back(i);
  }

  // One send channel and one receive channel per peer.
  std::map<int, Channel> sends, recvs;
  std::vector<uint32_t> local;  // copy / divide steps ready to run
  for (uint32_t i = 0; i < n; ++i) {
    switch (steps[i].kind) {
      case OpKind::kSend:
        sends[steps[i].peer].steps.push_back(i);
        break;
      case OpKind::kRecv:
      case OpKind::kRecvReduce:
        recvs[steps[i].peer].steps.push_back(i);
        break;
      default:
        break;
    }
  }

  size_t max_staged_bytes = 0;
  for (const Step& s : steps)
    if (s.kind == OpKind::kRecvReduce) max_staged_bytes = std::max(max_staged_bytes, s.bytes);
  if (staging_.size() < kMaxStaged) staging_.resize(kMaxStaged);
  std::vector<size_t> free_slots;
  for (size_t i = 0; i < kMaxStaged; ++i) {
    if (staging_[i].size() < max_staged_bytes) staging_[i].resize(max_staged_bytes);
    free_slots.push_back(kMaxStaged - 1 - i);
  }

  std::unordered_map<transport::RequestId, uint32_t> in_flight;
  std::vector<size_t> slot_of(n, SIZE_MAX);
  size_t completed = 0;
  std::vector<uint32_t> finished_now;

  auto finish = [&](uint32_t i) {
    ++completed;
    for (uint32_t d : dependents[i])
      if (--waiting[d] == 0 && (steps[d].kind == OpKind::kCopy || steps[d].kind == OpKind::kDivide)) local.push_back(d);
  };

  for (uint32_t i = 0; i < n; ++i)
    if (waiting[i] == 0 && (steps[i].kind == OpKind::kCopy || steps[i].kind == OpKind::kDivide)) local.push_back(i);

  // Posts every channel head whose dependencies are done.
  auto post_ready = [&] {
    for (auto& [peer, ch] : sends) {
      uint32_t index;
      while (ch.next < ch.steps.size() && waiting[index = ch.steps[ch.next]] == 0) {
        const Step& s = steps[index];
        in_flight[transport.post_send(peer, address(s.src), s.bytes, make_tag(args.seq, ch.next))] = index;
        ++ch.next;
      }
    }
    for (auto& [peer, ch] : recvs) {
      uint32_t index;
      while (ch.next < ch.steps.size() && waiting[index = ch.steps[ch.next]] == 0) {
        const Step& s = steps[index];
        void* into;
        if (s.kind == OpKind::kRecvReduce) {
          if (free_slots.empty()) break;
          slot_of[index] = free_slots.back();
          free_slots.pop_back();
          into = staging_[slot_of[index]].data();
        } else {
          into = address(s.dst);
        }
        in_flight[transport.post_recv(peer, into, s.bytes, make_tag(args.seq, ch.next))] = index;
        ++ch.next;
      }
    }
  };

  std::vector<transport::RequestId> done;
  while (completed < n) {
    while (!local.empty()) {
      uint32_t i = local.back();
      local.pop_back();
      const Step& s = steps[i];
      if (s.kind == OpKind::kCopy)
        std::memmove(address(s.dst), address(s.src), s.bytes);
      else
        reduce::divide(args.dtype, address(s.dst), s.bytes / elem, args.nranks);
      finish(i);
    }
    post_ready();
    if (completed == n) break;

    done.clear();
    transport.poll(done, local.empty() ? deadline.remaining_ms(100) : 0);
    for (transport::RequestId id : done) {
      uint32_t i = in_flight.at(id);
      in_flight.erase(id);
      const Step& s = steps[i];
      if (s.kind == OpKind::kRecvReduce) {
        reduce::reduce(args.dtype, args.op, address(s.dst), address(s.src), staging_[slot_of[i]].data(),
                       s.bytes / elem);
        free_slots.push_back(slot_of[i]);
      }
      finish(i);
    }
    if (done.empty() && deadline.expired()) {
      std::string pending;
      for (int peer : schedule.peers()) {
        std::string p = transport.pending_with(peer);
        if (!p.empty()) pending += (pending.empty() ? "" : "; ") + p;
      }
      fail(Code::kTimeout, "rank ", args.rank, ": ", args.what, " #", args.seq, " (", schedule.algorithm,
           ") timed out after ", deadline.budget_ms(), " ms (COLL_TIMEOUT_MS) with ", n - completed, " of ", n,
           " steps unfinished; pending: ", pending.empty() ? "nothing posted" : pending);
    }
  }
}

}  // namespace coll
