#include "sim/engine.h"

#include "base/error.h"
#include "sim/maxmin.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>

namespace coll::sim {
namespace {

using algo::OpKind;

bool is_send(OpKind k) { return k == OpKind::kSend; }
bool is_recv(OpKind k) { return k == OpKind::kRecv || k == OpKind::kRecvReduce; }

// Every step of every rank, numbered rank by rank.
struct Program {
  std::vector<size_t> first;  // first[r]: the id of rank r's step 0
  std::vector<const algo::Step*> step;
  std::vector<int> rank_of;
  std::vector<std::vector<size_t>> dependents;
  std::vector<uint32_t> waiting;  // dependencies not yet done
  std::vector<size_t> partner;    // a send's receive, a receive's send

  Program(const std::vector<algo::Schedule>& schedules) {
    for (size_t r = 0; r < schedules.size(); ++r) {
      first.push_back(step.size());
      for (const algo::Step& s : schedules[r].steps) {
        step.push_back(&s);
        rank_of.push_back(static_cast<int>(r));
      }
    }
    dependents.resize(step.size());
    waiting.resize(step.size());
    partner.assign(step.size(), SIZE_MAX);
    for (size_t id = 0; id < step.size(); ++id) {
      waiting[id] = static_cast<uint32_t>(step[id]->deps.size());
      for (uint32_t d : step[id]->deps) dependents[first[static_cast<size_t>(rank_of[id])] + d].push_back(id);
    }
    pair_messages(schedules.size());
  }

  // The k-th send from a to b is the k-th receive of b from a.
  void pair_messages(size_t nranks) {
    std::map<std::pair<int, int>, std::pair<std::vector<size_t>, std::vector<size_t>>> channels;
    for (size_t id = 0; id < step.size(); ++id) {
      const int peer = step[id]->peer;
      if (!is_send(step[id]->kind) && !is_recv(step[id]->kind)) continue;
      if (peer < 0 || static_cast<size_t>(peer) >= nranks)
        fail(Code::kInvalidArgument, "simulate: rank ", rank_of[id], " step ",
             id - first[static_cast<size_t>(rank_of[id])], " names peer ", peer, " of ", nranks, " ranks");
      if (is_send(step[id]->kind))
        channels[{rank_of[id], peer}].first.push_back(id);
      else
        channels[{peer, rank_of[id]}].second.push_back(id);
    }
    for (const auto& [ends, lists] : channels) {
      const auto& [sends, recvs] = lists;
      if (sends.size() != recvs.size())
        fail(Code::kInvalidArgument, "simulate: rank ", ends.first, " sends ", sends.size(), " messages to rank ",
             ends.second, ", which receives ", recvs.size());
      for (size_t k = 0; k < sends.size(); ++k) {
        if (step[sends[k]]->bytes != step[recvs[k]]->bytes)
          fail(Code::kInvalidArgument, "simulate: message ", k, " from rank ", ends.first, " to rank ", ends.second,
               " is ", step[sends[k]]->bytes, " bytes sent but ", step[recvs[k]]->bytes, " received");
        partner[sends[k]] = recvs[k];
        partner[recvs[k]] = sends[k];
      }
    }
  }
};

struct Flow {
  size_t send = 0;  // the send step
  std::vector<int> path;
  double left = 0;  // bytes
  double rate = 0;
};

class Run {
 public:
  Run(const std::vector<algo::Schedule>& schedules, const Fabric& fabric, const Costs& costs,
      std::vector<StepTime>* timeline, const Progress* progress)
      : p_(schedules), fabric_(fabric), costs_(costs), timeline_(timeline), progress_(progress) {
    start_.assign(p_.step.size(), -1);
    arrived_.assign(p_.step.size(), -1);
    result_.link_bytes.assign(static_cast<size_t>(fabric.num_links()), 0);
    capacity_.resize(static_cast<size_t>(fabric.num_links()));
    for (int l = 0; l < fabric.num_links(); ++l) capacity_[static_cast<size_t>(l)] = fabric.link(l).bytes_per_s;
  }

  Result go() {
    for (size_t id = 0; id < p_.step.size(); ++id)
      if (p_.waiting[id] == 0) ready(id, 0);
    while (!timers_.empty() || !flows_.empty()) {
      const double next_flow = next_flow_end();
      const double next_timer = timers_.empty() ? kNever : timers_.top().at;
      const double t = std::min(next_flow, next_timer);
      if (t == kNever)
        fail(Code::kInvalidArgument, "simulate: a message from rank ", p_.rank_of[flows_.front().send], " to rank ",
             p_.step[flows_.front().send]->peer, " crosses a link of no capacity (",
             fabric_.link(zero_link(flows_.front())).name, ": failed?) and never arrives");
      advance(t);
      bool changed = finish_flows();
      while (!timers_.empty() && timers_.top().at <= now_) {
        Timer timer = timers_.top();
        timers_.pop();
        changed |= fire(timer);
      }
      if (changed) rerate();
    }
    for (size_t id = 0; id < p_.step.size(); ++id)
      if (start_[id] < 0 || p_.waiting[id] != 0)
        fail(Code::kInternal, "simulate: rank ", p_.rank_of[id], " step ",
             id - p_.first[static_cast<size_t>(p_.rank_of[id])], " never ran: the schedules cannot finish");
    find_bottleneck();
    return result_;
  }

 private:
  static constexpr double kNever = std::numeric_limits<double>::infinity();
  enum class What : uint8_t { kDone, kFlowStart, kArrive };
  struct Timer {
    double at;
    What what;
    size_t step;
    bool operator<(const Timer& o) const { return at > o.at; }  // earliest first
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
        timers_.push({t + bytes * costs_.copy_s_per_byte, What::kDone, id});
        break;
      case OpKind::kReduce:
      case OpKind::kDivide:
        timers_.push({t + bytes * costs_.gamma_s_per_byte, What::kDone, id});
        break;
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
        Flow f{timer.step, fabric_.route(p_.rank_of[timer.step], s.peer), static_cast<double>(s.bytes), 0};
        for (int l : f.path) result_.link_bytes[static_cast<size_t>(l)] += f.left;
        ++result_.messages;
        if (f.left <= 0) {
          timers_.push({now_ + fabric_.latency(f.path), What::kArrive, timer.step});
          return false;
        }
        flows_.push_back(std::move(f));
        return true;
      }
      case What::kArrive: {
        const size_t recv = p_.partner[timer.step];
        arrived_[recv] = now_;
        done(timer.step);  // the send is done once its bytes are in
        if (start_[recv] >= 0) receive(recv, std::max(now_, start_[recv]));
        return false;
      }
      case What::kDone:
        done(timer.step);
        return false;
    }
    return false;
  }

  void done(size_t id) {
    result_.seconds = std::max(result_.seconds, now_);
    if (progress_ != nullptr && ++steps_done_ % 65536 == 0) (*progress_)(steps_done_, p_.step.size(), now_);
    if (timeline_ != nullptr) {
      const algo::Step& s = *p_.step[id];
      const int r = p_.rank_of[id];
      const size_t partner = p_.partner[id];
      const int peer_step =
          partner == SIZE_MAX ? -1 : static_cast<int>(partner - p_.first[static_cast<size_t>(s.peer)]);
      timeline_->push_back(StepTime{r, static_cast<int>(id - p_.first[static_cast<size_t>(r)]), s.kind, s.peer,
                                    peer_step, s.bytes, start_[id], now_});
    }
    for (size_t next : p_.dependents[id])
      if (--p_.waiting[next] == 0) ready(next, now_);
  }

  int zero_link(const Flow& f) const {
    for (int l : f.path)
      if (capacity_[static_cast<size_t>(l)] <= 0) return l;
    return f.path.front();
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

  bool finish_flows() {
    bool any = false;
    for (size_t i = 0; i < flows_.size();) {
      Flow& f = flows_[i];
      // Within a part in a billion of the bytes (or a byte): rounding of the steps in time; or
      // what is left would end within the resolution of the clock (late in a long run).
      if (f.left > 1e-9 * static_cast<double>(p_.step[f.send]->bytes) + 1e-6 && now_ + f.left / f.rate > now_) {
        ++i;
        continue;
      }
      timers_.push({now_ + fabric_.latency(f.path), What::kArrive, f.send});
      flows_[i] = std::move(flows_.back());
      flows_.pop_back();
      any = true;
    }
    return any;
  }

  void rerate() {
    std::vector<const std::vector<int>*> paths;
    for (const Flow& f : flows_) paths.push_back(&f.path);
    std::vector<double> rates;
    max_min_rates(capacity_, paths, rates);
    for (size_t i = 0; i < flows_.size(); ++i) flows_[i].rate = rates[i];
  }

  void find_bottleneck() {
    for (int l = 0; l < fabric_.num_links(); ++l) {
      const double busy = result_.link_bytes[static_cast<size_t>(l)] / capacity_[static_cast<size_t>(l)];
      if (result_.link_bytes[static_cast<size_t>(l)] > 0 && busy > result_.bottleneck_busy_s)
        result_.bottleneck = l, result_.bottleneck_busy_s = busy;
    }
  }

  Program p_;
  const Fabric& fabric_;
  Costs costs_;
  std::vector<StepTime>* timeline_;
  const Progress* progress_;
  size_t steps_done_ = 0;
  std::vector<double> start_, arrived_, capacity_;
  std::priority_queue<Timer> timers_;
  std::vector<Flow> flows_;
  double now_ = 0;
  Result result_;
};

}  // namespace

Result simulate(const std::vector<algo::Schedule>& schedules, const Fabric& fabric, const Costs& costs,
                std::vector<StepTime>* timeline, const Progress* progress) {
  return Run(schedules, fabric, costs, timeline, progress).go();
}

}  // namespace coll::sim
