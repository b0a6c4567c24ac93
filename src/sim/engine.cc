#include "sim/engine.h"

#include "base/error.h"
#include "sim/maxmin.h"
#include "sim/paths.h"
#include "sim/program.h"
#include "sim/symmetry.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <queue>

namespace coll::sim {
namespace {

using algo::OpKind;

struct Flow {
  size_t send = 0;  // the send step, or the local copy or reduction
  const Path* path = nullptr;
  double left = 0;  // bytes
  double rate = 0;
  bool local = false;  // a copy or reduction through the node's memory
};

class Run {
 public:
  Run(const std::vector<algo::Schedule>& schedules, const Fabric& fabric, const Costs& costs,
      std::vector<StepTime>* timeline, const Progress* progress, const Symmetry& sym)
      : sym_(sym),
        p_(schedules, sym_),
        fabric_(fabric),
        paths_(fabric, sym_, costs),
        costs_(costs),
        timeline_(timeline),
        progress_(progress) {
    start_.assign(p_.step.size(), -1);
    arrived_.assign(p_.step.size(), -1);
    carried_.assign(paths_.capacity().size(), 0);
  }

  Result go() {
    for (size_t id = 0; id < p_.step.size(); ++id)
      if (p_.waiting[id] == 0) ready(id, 0);
    if (started_) rerate();
    while (!timers_.empty() || !flows_.empty()) {
      const double next_flow = next_flow_end();
      const double next_timer = timers_.empty() ? kNever : timers_.top().at;
      const double t = std::min(next_flow, next_timer);
      if (t == kNever) {
        const Flow& f = flows_.front();
        if (f.local)
          fail(Code::kInvalidArgument, "simulate: rank ", p_.rank_of(f.send), "'s step ", p_.step_index(f.send),
               " (a local copy or reduction) crosses a link of no capacity (", paths_.hop_name(zero_link(f)),
               ") and never ends");
        fail(Code::kInvalidArgument, "simulate: a message from rank ", p_.rank_of(f.send), " to rank ",
             p_.step[f.send]->peer, " crosses a link of no capacity (", paths_.hop_name(zero_link(f)),
             ": failed?) and never arrives");
      }
      advance(t);
      bool changed = finish_flows();
      while (!timers_.empty() && timers_.top().at <= now_) {
        Timer timer = timers_.top();
        timers_.pop();
        changed |= fire(timer);
      }
      if (changed || started_) rerate();
    }
    for (size_t id = 0; id < p_.step.size(); ++id)
      if (start_[id] < 0 || p_.waiting[id] != 0)
        fail(Code::kInternal, "simulate: rank ", p_.rank_of(id), " step ", p_.step_index(id),
             " never ran: the schedules cannot finish");
    find_bottleneck();
    return result_;
  }

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();
  enum class What : uint8_t { kDone, kFlowStart, kArrive };
  struct Channel {
    bool busy = false;  // a message to this peer is on its way out
    std::deque<size_t> queued;
  };
  struct Timer {
    double at;
    What what;
    size_t step;
    // Earliest first; at one time, in step order (sends to one peer leave in program order).
    bool operator<(const Timer& o) const { return at != o.at ? at > o.at : step > o.step; }
  };

  void ready(size_t id, double t) {
    start_[id] = t;
    const algo::Step& s = *p_.step[id];
    const double bytes = static_cast<double>(s.bytes);
    switch (s.kind) {
      case OpKind::kSend:
        timers_.push({t + costs_.alpha_s, What::kFlowStart, id});
        break;
      case OpKind::kRecv:
      case OpKind::kRecvReduce:
        if (arrived_[id] >= 0) receive(id, std::max(t, arrived_[id]));
        break;
      case OpKind::kCopy:
      case OpKind::kReduce:
      case OpKind::kDivide: {
        // On CPU ranks the bytes pass through the rank's core and its node's memory, shared with its messages.
        const Path& local = paths_.of(p_.unit_of[id], Paths::kLocal, s.kind == OpKind::kReduce);
        if (s.bytes > 0 && !local.hops.empty()) {
          flows_.push_back(Flow{id, &local, bytes, 0, true});
          for (const Hop& h : local.hops) carried_[static_cast<size_t>(h.link)] += bytes * h.weight;
          started_ = true;
          break;
        }
        timers_.push({t + bytes * (s.kind == OpKind::kCopy ? costs_.copy_s_per_byte : costs_.gamma_s_per_byte),
                      What::kDone, id});
        break;
      }
    }
  }

  // Both the message and the posted receive are there.
  void receive(size_t id, double t) {
    const algo::Step& s = *p_.step[id];
    const double reduce = s.kind == OpKind::kRecvReduce ? static_cast<double>(s.bytes) * costs_.gamma_s_per_byte : 0;
    timers_.push({t + reduce, What::kDone, id});
  }

  bool fire(const Timer& timer) {
    switch (timer.what) {
      case What::kFlowStart: {
        const algo::Step& s = *p_.step[timer.step];
        result_.messages += static_cast<size_t>(sym_.members(p_.unit_of[timer.step]));
        // Messages to one peer leave one after another, as on a connection.
        Channel& c = channels_[{p_.unit_of[timer.step], s.peer}];
        if (c.busy) {
          c.queued.push_back(timer.step);
          return false;
        }
        return leave(c, timer.step);
      }
      case What::kArrive: {
        arrive(p_.partner[timer.step]);
        for (auto [it, end] = p_.also_delivers.equal_range(timer.step); it != end; ++it) arrive(it->second);
        done(timer.step);  // the send is done once its bytes are in
        return false;
      }
      case What::kDone:
        done(timer.step);
        return false;
    }
    return false;
  }

  void arrive(size_t recv) {
    if (recv == SIZE_MAX) return;  // a send to the second of two alike ranks, whose class's receive another delivers
    arrived_[recv] = now_;
    if (start_[recv] >= 0) receive(recv, std::max(now_, start_[recv]));
  }

  void done(size_t id) {
    result_.seconds = std::max(result_.seconds, now_);
    if (progress_ != nullptr && ++steps_done_ % 65536 == 0) (*progress_)(steps_done_, p_.step.size(), now_);
    if (timeline_ != nullptr) {
      const algo::Step& s = *p_.step[id];
      const size_t partner = p_.partner[id];
      const int peer_step = partner == SIZE_MAX ? -1 : p_.step_index(partner);
      timeline_->push_back(
          StepTime{p_.rank_of(id), p_.step_index(id), s.kind, s.peer, peer_step, s.bytes, start_[id], now_});
    }
    for (size_t next : p_.dependents[id])
      if (--p_.waiting[next] == 0) ready(next, now_);
  }

  int zero_link(const Flow& f) const {
    for (const Hop& h : f.path->hops)
      if (paths_.capacity()[static_cast<size_t>(h.link)] <= 0) return h.link;
    return f.path->hops.front().link;
  }

  double next_flow_end() const {
    double t = kNever;
    for (const Flow& f : flows_) t = std::min(t, now_ + f.left / f.rate);
    return t;
  }

  void advance(double t) {
    const double dt = t - now_;
    for (Flow& f : flows_) f.left -= f.rate * dt;
    now_ = t;
  }

  // A message starts on its free channel: a flow, or at once on its way if it has no bytes (and the
  // next one queued behind it leaves too). True when a flow started.
  bool leave(Channel& c, size_t send) {
    for (;;) {
      const algo::Step& s = *p_.step[send];
      // (A second send to alike ranks has no partner: a broadcast's, which no receiver reduces.)
      const size_t receive = p_.partner[send];
      const bool reducing = receive != SIZE_MAX && p_.step[receive]->kind == OpKind::kRecvReduce;
      const Path* path = &paths_.of(p_.unit_of[send], s.peer, reducing);
      if (s.bytes > 0) {
        Flow f{send, path, static_cast<double>(s.bytes), 0};
        for (const Hop& h : path->hops) carried_[static_cast<size_t>(h.link)] += f.left * h.weight;
        flows_.push_back(f);
        c.busy = true;
        return true;
      }
      timers_.push({now_ + path->latency_s, What::kArrive, send});
      c.busy = false;
      if (c.queued.empty()) return false;
      send = c.queued.front();
      c.queued.pop_front();
    }
  }

  bool finish_flows() {
    std::vector<size_t> finished;
    bool changed = false;
    for (size_t i = 0; i < flows_.size();) {
      Flow& f = flows_[i];
      // Within a part in a billion of the bytes (or a byte): rounding of the steps in time; or
      // what is left would end within the resolution of the clock (late in a long run).
      if (f.left > 1e-9 * static_cast<double>(p_.step[f.send]->bytes) + 1e-6 && now_ + f.left / f.rate > now_) {
        ++i;
        continue;
      }
      if (f.local) {
        const algo::Step& s = *p_.step[f.send];
        const double gamma = s.kind == OpKind::kCopy ? 0 : costs_.gamma_s_per_byte;
        timers_.push({now_ + static_cast<double>(s.bytes) * gamma, What::kDone, f.send});
      } else {
        timers_.push({now_ + f.path->latency_s, What::kArrive, f.send});
        finished.push_back(f.send);
      }
      flows_[i] = std::move(flows_.back());
      flows_.pop_back();
      changed = true;
    }
    // The next message to the same peer leaves.
    for (size_t send : finished) {
      Channel& c = channels_[{p_.unit_of[send], p_.step[send]->peer}];
      c.busy = false;
      if (c.queued.empty()) continue;
      const size_t next = c.queued.front();
      c.queued.pop_front();
      leave(c, next);
    }
    return changed;
  }

  void rerate() {
    started_ = false;
    hops_.clear();
    for (const Flow& f : flows_) hops_.push_back(&f.path->hops);
    maxmin_.solve(paths_.capacity(), hops_, rates_);
    for (size_t i = 0; i < flows_.size(); ++i) flows_[i].rate = rates_[i];
  }

  // What each link carried (under a symmetry: each kind's, on one link of it).
  void find_bottleneck() {
    result_.link_bytes.assign(static_cast<size_t>(fabric_.num_links()), 0);
    for (size_t h = 0; h < carried_.size(); ++h) {
      if (carried_[h] <= 0) continue;
      const int link = paths_.example(static_cast<int>(h));
      result_.link_bytes[static_cast<size_t>(link)] = carried_[h];
      const double busy = carried_[h] / paths_.capacity()[h];
      if (busy > result_.bottleneck_busy_s) {
        result_.bottleneck = link, result_.bottleneck_busy_s = busy;
        result_.bottleneck_kind = paths_.symmetric() ? paths_.kind(static_cast<int>(h)) : -1;
      }
    }
  }

  Symmetry sym_;
  Program p_;
  const Fabric& fabric_;
  Paths paths_;
  Costs costs_;
  std::vector<StepTime>* timeline_;
  const Progress* progress_;
  size_t steps_done_ = 0;
  std::vector<double> start_, arrived_, carried_;
  std::priority_queue<Timer> timers_;
  std::vector<Flow> flows_;
  MaxMin maxmin_;
  std::vector<const std::vector<Hop>*> hops_;  // the flows', for maxmin_
  std::vector<double> rates_;
  std::map<std::pair<int, int>, Channel> channels_;  // by sender and receiver
  double now_ = 0;
  bool started_ = false;  // a local flow began outside a message's event: rates to share again
  Result result_;
};

}  // namespace

Result simulate(const std::vector<algo::Schedule>& schedules, const Fabric& fabric, const Costs& costs,
                std::vector<StepTime>* timeline, const Progress* progress, const Symmetry* symmetry) {
  const int n = static_cast<int>(schedules.size());
  return Run(schedules, fabric, costs, timeline, progress, symmetry != nullptr ? *symmetry : Symmetry(n)).go();
}

}  // namespace coll::sim
