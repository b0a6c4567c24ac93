#include "core/executor.h"

#include "base/error.h"
#include "base/log.h"
#include "core/op_signature.h"

#include <algorithm>

namespace coll {

using algo::BufferId;
using algo::OpKind;
using algo::Step;

namespace {

// Receives that may hold a staging buffer at once: enough to keep the
// pipeline full, bounded so memory stays at a few chunks.
constexpr size_t kMaxStaged = 8;

// Looks at the transport (poll with timeout 0) before a wait that reads the
// clock: a peer that is running answers within a few, and a clock read costs
// as much as a small message's whole software path.
constexpr int kLooksBeforeWait = 64;

// An in-flight entry whose request has completed.
constexpr uint32_t kHole = UINT32_MAX;

bool is_local(OpKind k) { return k == OpKind::kCopy || k == OpKind::kReduce || k == OpKind::kDivide; }

// dst = own (op) received, or received (op) own where the step puts the
// peer's data first (Step::received_first).
void reduce_received(const reduce::Backend& backend, coll_datatype_t dtype, coll_redop_t op, void* dst, const void* own,
                     const void* received, bool received_first, size_t count, void* stream) {
  backend.reduce(dtype, op, dst, received_first ? received : own, received_first ? own : received, count, stream);
}

}  // namespace

void Graph::build(const std::vector<const algo::Schedule*>& schedules) {
  steps.clear();
  job_of.clear();
  std::vector<uint32_t> base;
  for (uint32_t j = 0; j < schedules.size(); ++j) {
    base.push_back(static_cast<uint32_t>(steps.size()));
    for (const Step& s : schedules[j]->steps) {
      steps.push_back(&s);
      job_of.push_back(j);
    }
  }
  const size_t n = steps.size();
  dependents_start.assign(n + 1, 0);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t d : steps[i]->deps) ++dependents_start[base[job_of[i]] + d + 1];
  for (size_t i = 0; i < n; ++i) dependents_start[i + 1] += dependents_start[i];
  dependents.resize(dependents_start[n]);
  std::vector<uint32_t> fill(dependents_start.begin(), dependents_start.end() - 1);
  deps.assign(n, 0);
  sends.clear();
  recvs.clear();
  ready.clear();
  max_staged_bytes = 0;
  // Channels in order of first use; by_peer finds a peer's without a search
  // (an alltoall plan has a channel per rank).
  int max_peer = -1;
  for (const Step* s : steps) max_peer = std::max(max_peer, s->peer);
  std::vector<int> send_of(static_cast<size_t>(max_peer + 1), -1), recv_of(static_cast<size_t>(max_peer + 1), -1);
  auto file = [](std::vector<Channel>& channels, std::vector<int>& by_peer, int peer, uint32_t i) {
    int& c = by_peer[static_cast<size_t>(peer)];
    if (c < 0) c = static_cast<int>(channels.size()), channels.push_back(Channel{peer, {}});
    channels[static_cast<size_t>(c)].steps.push_back(i);
  };
  for (uint32_t i = 0; i < n; ++i) {
    const Step& s = *steps[i];
    deps[i] = static_cast<uint32_t>(s.deps.size());
    for (uint32_t d : s.deps) dependents[fill[base[job_of[i]] + d]++] = i;
    if (s.kind == OpKind::kSend) file(sends, send_of, s.peer, i);
    if (s.kind == OpKind::kRecv || s.kind == OpKind::kRecvReduce) file(recvs, recv_of, s.peer, i);
    if (s.kind == OpKind::kRecvReduce) max_staged_bytes = std::max(max_staged_bytes, s.bytes);
    if (deps[i] == 0 && is_local(s.kind)) ready.push_back(i);
  }
}

// dst = src (op) piece, or piece (op) src, for the piece of a received
// chunk at `offset`.
void Executor::combine_piece(const transport::Sink& sink, size_t offset, const void* data, size_t bytes) {
  const Combine& c = *static_cast<const Combine*>(sink.context);
  reduce_received(*c.backend, c.dtype, c.op, c.dst + offset, c.src + offset, data, c.received_first,
                  bytes / c.elem_size, c.stream);
}

void Executor::run(std::vector<Job>& jobs, int rank, int nranks, uint64_t seq, ChannelCounters& counters,
                   transport::Transport& transport, const Deadline& deadline, FlightRecorder& recorder,
                   OpRecord& record) {
  const Graph& g = graph_of(jobs);
  const size_t n = g.steps.size();
  if (n == 0) return;
  call_ = Call{&jobs, &g, rank, nranks, seq, &counters, &transport, &deadline, &recorder, &record};
  prepare();
  while (call_.completed < n) {
    run_local_steps();
    post_ready();
    if (call_.completed == n) break;
    if (call_.oldest == in_flight_.size() && local_.empty()) fail_stalled();  // a schedule bug, not a slow peer
    wait_and_complete();
  }
}

const Graph& Executor::graph_of(const std::vector<Job>& jobs) {
  if (jobs.size() == 1) return jobs[0].plan->graph;
  schedules_.clear();
  for (const Job& j : jobs) schedules_.push_back(&j.plan->schedule);
  batch_.build(schedules_);
  return batch_;
}

void Executor::prepare() {
  const Graph& g = *call_.graph;
  const std::vector<Job>& jobs = *call_.jobs;
  waiting_.assign(g.deps.begin(), g.deps.end());
  local_.assign(g.ready.begin(), g.ready.end());
  send_next_.assign(g.sends.size(), 0);
  recv_next_.assign(g.recvs.size(), 0);
  if (scratch_.size() < jobs.size()) scratch_.resize(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j)
    if (const size_t bytes = jobs[j].plan->schedule.scratch_bytes; bytes > 0)
      scratch_[j].get(jobs[j].kind, bytes, bytes, jobs[j].recv, jobs[j].stream);
  staging_.resize(kMaxStaged);             // each buffer grows when a receive first needs it (post_recv)
  if (free_slots_.size() != kMaxStaged) {  // a run that failed kept some
    free_slots_.clear();
    for (size_t i = 0; i < kMaxStaged; ++i) free_slots_.push_back(kMaxStaged - 1 - i);
  }
  slot_of_.assign(g.steps.size(), SIZE_MAX);
  if (combine_.size() < g.steps.size())
    combine_.resize(g.steps.size());  // sinks point into it: grown only, never moved
  in_flight_.clear();
}

const Job& Executor::job_of(uint32_t i) const { return (*call_.jobs)[call_.graph->job_of[i]]; }

std::byte* Executor::address(uint32_t i, const algo::Region& r) {
  const Job& job = job_of(i);
  void* b = r.buffer == BufferId::kSend   ? const_cast<void*>(job.send)
            : r.buffer == BufferId::kRecv ? job.recv
                                          : static_cast<void*>(scratch_[call_.graph->job_of[i]].data());
  return static_cast<std::byte*>(b) + r.offset;
}

size_t Executor::elems(uint32_t i) const { return call_.graph->steps[i]->bytes / job_of(i).plan->schedule.elem_size; }

// Counts step i done and readies the local steps that waited only on it.
void Executor::finish(uint32_t i) {
  const Graph& g = *call_.graph;
  call_.record->steps_done.store(static_cast<uint32_t>(++call_.completed), std::memory_order_relaxed);
  for (uint32_t k = g.dependents_start[i]; k < g.dependents_start[i + 1]; ++k) {
    uint32_t d = g.dependents[k];
    if (--waiting_[d] == 0 && is_local(g.steps[d]->kind)) local_.push_back(d);
  }
}

void Executor::run_local_steps() {
  const reduce::Backend* queued = nullptr;  // a backend that queued work on a stream
  void* stream = nullptr;
  while (!local_.empty()) {
    uint32_t i = local_.back();
    local_.pop_back();
    const Step& s = *call_.graph->steps[i];
    const Job& job = job_of(i);
    const reduce::Backend& backend = reduce::backend_for(job.kind);
    if (s.kind == OpKind::kCopy)
      backend.copy(address(i, s.dst), address(i, s.src), s.bytes, job.stream);
    else if (s.kind == OpKind::kReduce)
      backend.reduce(job.dtype, job.op, address(i, s.dst), address(i, s.dst), address(i, s.src), elems(i), job.stream);
    else
      backend.divide(job.dtype, address(i, s.dst), elems(i), call_.nranks, job.stream);
    if (backend.wait != nullptr) queued = &backend, stream = job.stream;
    finish(i);
  }
  // Before any send posted after this reads what the steps wrote.
  if (queued != nullptr) queued->wait(stream);
}

// Posts every channel head whose dependencies are done.
void Executor::post_ready() {
  const Graph& g = *call_.graph;
  for (size_t c = 0; c < g.sends.size(); ++c) {
    const Graph::Channel& ch = g.sends[c];
    while (send_next_[c] < ch.steps.size() && waiting_[ch.steps[send_next_[c]]] == 0) {
      uint32_t i = ch.steps[send_next_[c]++];
      const uint64_t tag = make_tag(job_of(i).signature, call_.counters->sent[static_cast<size_t>(ch.peer)]++);
      const Step& s = *g.steps[i];
      in_flight_.emplace_back(
          call_.transport->post_send(ch.peer, transport::Buffer{address(i, s.src), s.bytes, job_of(i).kind}, tag), i);
    }
  }
  for (size_t c = 0; c < g.recvs.size(); ++c) {
    const Graph::Channel& ch = g.recvs[c];
    while (recv_next_[c] < ch.steps.size() && waiting_[ch.steps[recv_next_[c]]] == 0 &&
           post_recv(ch.peer, ch.steps[recv_next_[c]]))
      ++recv_next_[c];
  }
}

// Posts receive step i from `peer`: into its place, to a sink that reduces
// the pieces as they come, or into a staging buffer. False when every
// staging buffer is taken (the receive waits for one).
bool Executor::post_recv(int peer, uint32_t i) {
  const Step& s = *call_.graph->steps[i];
  const Job& job = job_of(i);
  uint64_t& received = call_.counters->received[static_cast<size_t>(peer)];
  const uint64_t tag = make_tag(job.signature, received);
  transport::Transport& transport = *call_.transport;
  // Pieces come from a host transport's own memory: device buffers go
  // elsewhere (the router's device route), whole.
  if (s.kind == OpKind::kRecvReduce && job.kind == MemoryKind::kHost && transport.delivers_pieces_from(peer)) {
    combine_[i] = Combine{.backend = &reduce::backend_for(job.kind),
                          .stream = job.stream,
                          .dtype = job.dtype,
                          .op = job.op,
                          .elem_size = job.plan->schedule.elem_size,
                          .dst = address(i, s.dst),
                          .src = address(i, s.src),
                          .received_first = s.received_first};
    ++received;
    in_flight_.emplace_back(transport.post_recv_sink(peer, s.bytes, tag, {&combine_piece, &combine_[i]}), i);
    return true;
  }
  void* into;
  if (s.kind == OpKind::kRecvReduce) {
    if (free_slots_.empty()) return false;
    slot_of_[i] = free_slots_.back();
    free_slots_.pop_back();
    // Grown on first need only: a transport that delivers pieces never stages.
    into = staging_[slot_of_[i]].get(job.kind, s.bytes, call_.graph->max_staged_bytes, job.recv, job.stream);
  } else {
    into = address(i, s.dst);
  }
  ++received;
  in_flight_.emplace_back(transport.post_recv(peer, transport::Buffer{into, s.bytes, job.kind}, tag), i);
  return true;
}

// Polls the transport (waiting, after kLooksBeforeWait idle looks, up to the
// deadline) and completes what it reports.
void Executor::wait_and_complete() {
  done_.clear();
  const bool wait = local_.empty() && call_.idle_looks >= kLooksBeforeWait;
  call_.transport->poll(done_, wait ? call_.deadline->remaining_ms(100) : 0);
  call_.idle_looks = done_.empty() ? call_.idle_looks + 1 : 0;
  if (wait && done_.empty()) {  // a long wait: say on whom, for the flight recorder
    if (call_.deadline->cancelled()) fail_aborted();
    if ((call_.idle_looks - kLooksBeforeWait) % 64 == 1)
      call_.recorder->waiting_on(*call_.record, peers_in_flight(*call_.graph));
  }
  for (transport::RequestId id : done_) complete(take(id));
  if (done_.empty() && wait && call_.deadline->expired()) fail_timed_out();
}

// The step a completed request belongs to. Requests are kept in posting
// order and mostly complete in it, so the search starts at the oldest one
// still in flight (a broadcast may post thousands of receives at once; a
// hash map would allocate per request). Finished entries become holes.
uint32_t Executor::take(transport::RequestId id) {
  size_t& oldest = call_.oldest;
  size_t k = oldest;
  while (k < in_flight_.size() && (in_flight_[k].second == kHole || in_flight_[k].first != id)) ++k;
  if (k == in_flight_.size()) fail(Code::kInternal, "rank ", call_.rank, ": unknown request ", id, " completed");
  uint32_t i = in_flight_[k].second;
  in_flight_[k].second = kHole;
  while (oldest < in_flight_.size() && in_flight_[oldest].second == kHole) ++oldest;
  if (oldest == in_flight_.size()) in_flight_.clear(), oldest = 0;
  return i;
}

// A transfer is done; a staged receive is reduced into place first (one a
// sink took is reduced already).
void Executor::complete(uint32_t i) {
  const Step& s = *call_.graph->steps[i];
  if (s.kind == OpKind::kRecvReduce && slot_of_[i] != SIZE_MAX) {
    const Job& job = job_of(i);
    const reduce::Backend& backend = reduce::backend_for(job.kind);
    reduce_received(backend, job.dtype, job.op, address(i, s.dst), address(i, s.src), staging_[slot_of_[i]].data(),
                    s.received_first, elems(i), job.stream);
    if (backend.wait != nullptr) backend.wait(job.stream);  // before a send reads it
    free_slots_.push_back(slot_of_[i]);
  }
  finish(i);
}

// "rank 1: allreduce #7 (ring)", the start of every failure's message.
std::string Executor::describe_call() const {
  const Job& first = (*call_.jobs)[0];
  return "rank " + std::to_string(call_.rank) + ": " + first.what + " #" + std::to_string(call_.seq) + " (" +
         first.plan->schedule.algorithm + ")";
}

std::string Executor::describe_unfinished() const {
  const size_t n = call_.graph->steps.size();
  return std::to_string(n - call_.completed) + " of " + std::to_string(n) + " steps unfinished";
}

void Executor::fail_stalled() const {
  fail(Code::kInternal, describe_call(), " stalled with ", describe_unfinished(), " and nothing in flight");
}

void Executor::fail_aborted() const {
  fail(Code::kInvalidUsage, describe_call(), " was aborted (coll_comm_abort) with ", describe_unfinished());
}

void Executor::fail_timed_out() const {
  std::string pending;
  for (const auto* channels : {&call_.graph->sends, &call_.graph->recvs})
    for (const Graph::Channel& ch : *channels) {
      std::string p = call_.transport->pending_with(ch.peer);
      if (!p.empty() && pending.find(p) == std::string::npos) pending += (pending.empty() ? "" : "; ") + p;
    }
  const Deadline& deadline = *call_.deadline;
  fail(Code::kTimeout, describe_call(), " timed out after ", deadline.budget_ms(), " ms (", deadline.setting(),
       ") with ", describe_unfinished(), "; pending: ", pending.empty() ? "nothing posted" : pending);
}

std::string Executor::peers_in_flight(const Graph& g) const {
  std::vector<int> peers;
  for (const auto& [id, step] : in_flight_)
    if (step != kHole) peers.push_back(g.steps[step]->peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  std::string out;
  for (int p : peers) {
    if (!out.empty()) out += ',';
    out += std::to_string(p);
  }
  return out;
}

}  // namespace coll
